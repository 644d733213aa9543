# shellcheck shell=bash
# The options and the output folder of bench/gpu_check.sh, gpu_profile.sh and gpu_debs.sh (issue 65),
# sourced by each after it sets `me` (its name in messages). A script removes or replaces only what
# it can prove it made: the folder it writes into is new, empty, or holds the marker it wrote there.

# shellcheck disable=SC2154  # me: set by the script that sources this file
die() { echo "$me: $*" >&2; exit 2; }

# value OPTION VALUE...: VALUE, refused in one line when it is missing, empty or another option
# (as `x=$(value "$@") || exit 2`).
value() {
  [ $# -ge 2 ] || die "$1 needs a value (see --help)"
  [ -n "$2" ] || die "$1 is empty: give it a value (see --help)"
  case $2 in -*) die "$1 needs a value, not the option '$2' (see --help)" ;; esac
  printf '%s' "$2"
}

# own_folder OPTION DIR MARKER: makes DIR (a new or empty folder) or takes it back (it holds MARKER,
# a plain file), then writes MARKER in it; refuses in one line a name with a control character or a
# leading '-', the root folder, a file or a link, and a folder that holds anything but not MARKER.
own_folder() {
  local option=$1 dir=$2 marker=$3
  case $dir in
    *[[:cntrl:]]*) die "$option $(printf %q "$dir") holds a control character: name a plain folder" ;;
    -*) die "$option '$dir' starts with '-': name a folder (./$dir for one named so)" ;;
  esac
  if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
    die "$option '$dir' is not a folder (a file or a link): name a new folder"
  fi
  [ "$(realpath -m -- "$dir")" != / ] || die "$option '$dir' is the root folder: name a new folder"
  if [ -d "$dir" ] && [ -n "$(ls -A -- "$dir")" ] && ! { [ -f "$dir/$marker" ] && [ ! -L "$dir/$marker" ]; }; then
    die "'$dir' is not empty and was not made by this script (no $marker in it): name a new or empty folder with $option"
  fi
  mkdir -p -- "$dir" || die "cannot make the folder '$dir'"
  [ -f "$dir/$marker" ] || echo "made by $me: what it writes here it replaces on its next run" > "$dir/$marker" ||
    die "cannot write in '$dir'"
}
