# Shared by packaging/fresh-check.sh (and meant for libtorch2-check.sh): a Debian root made by
# debootstrap and marked as ours, copied, mounted for a chroot and removed only when the marker
# says this script family made it. Sourced, not run. Needs root.
# shellcheck shell=bash

ROOT_MARKER=.hsm-debian-root  # written into every root made here; any other folder is refused
MOUNTED=()                    # mount points to undo on exit, innermost last
EXIT_ALSO=()                  # commands run on exit after the mounts are undone

die() { echo "${0##*/}: $*" >&2; exit 1; }
say() { echo "${0##*/}: $*"; }
stamp() { date +%s; }
elapsed() { echo "$(( $(stamp) - $1 ))s"; }

# The Debian mirror the machine's apt already uses (one-line and deb822 sources): the first URI
# ending in /debian.
debian_mirror() {
  local f m
  m="$(
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f"
    done | grep -E '/debian/?$' | head -1
  )"
  [ -n "$m" ] || return 1
  echo "${m%/}"
}

# make_root DIR SUITE MIRROR [COMPONENTS]: debootstrap --variant=minbase into DIR.partial, marked
# and renamed when complete; an existing DIR with the marker is reused, one without is refused.
make_root() {
  local dir=$1 suite=$2 mirror=$3 components=${4:-main} t
  if [ -e "$dir" ]; then
    [ -f "$dir/$ROOT_MARKER" ] || die "'$dir' exists but was not made by this script (no $ROOT_MARKER); pass another folder"
    say "reusing the $suite minbase at $dir"
    return 0
  fi
  [ ! -e "$dir.partial" ] || [ -f "$dir.partial/$ROOT_MARKER.partial" ] ||
    die "'$dir.partial' exists but was not made by this script; remove it or pass another folder"
  mkdir -p "$dir.partial"
  touch "$dir.partial/$ROOT_MARKER.partial"
  t=$(stamp)
  say "debootstrap --variant=minbase $suite ($components) from $mirror into $dir"
  debootstrap --variant=minbase --components="$components" "$suite" "$dir.partial" "$mirror" >"$dir.partial.log" 2>&1 ||
    { tail -5 "$dir.partial.log" >&2; die "debootstrap failed (log: $dir.partial.log)"; }
  mv "$dir.partial/$ROOT_MARKER.partial" "$dir.partial/$ROOT_MARKER"
  mv "$dir.partial" "$dir"
  rm -f "$dir.partial.log"
  say "debootstrap took $(elapsed "$t"); $(du -sh --one-file-system "$dir" | cut -f1)"
}

# copy_root FROM TO: a fresh copy of a marked root (TO must not exist).
copy_root() {
  [ -f "$1/$ROOT_MARKER" ] || die "'$1' is not a root made here"
  [ ! -e "$2" ] || die "'$2' exists already"
  cp -a "$1" "$2.partial"
  mv "$2.partial" "$2"
}

# remove_root DIR: removes DIR only if it carries the marker and nothing is mounted below it.
remove_root() {
  local dir=$1
  [ -e "$dir" ] || [ -e "$dir.partial" ] || return 0
  local d
  for d in "$dir" "$dir.partial"; do
    [ -e "$d" ] || continue
    [ -f "$d/$ROOT_MARKER" ] || die "'$d' exists but was not made by this script (no $ROOT_MARKER); left alone"
    if findmnt -rn -o TARGET | grep -q "^$d/"; then die "'$d' still has mounts below it; left alone"; fi
    rm -rf --one-file-system "$d"
  done
}

undo_mounts() {
  local i
  for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
    umount -R "${MOUNTED[$i]}" 2>/dev/null || umount -R -l "${MOUNTED[$i]}" || true
  done
  MOUNTED=()
  for i in "${EXIT_ALSO[@]}"; do eval "$i" || true; done
}
trap_exit_also() { EXIT_ALSO+=("$1"); }

# mount_root DIR: /proc, /sys, /dev for a chroot into DIR, undone on any exit or signal.
mount_root() {
  local root=$1 t
  trap undo_mounts EXIT
  trap 'exit 130' INT TERM HUP  # so that the EXIT trap unmounts on a signal too
  for t in proc sys dev; do mkdir -p "$root/$t"; done
  mount -t proc proc "$root/proc"; MOUNTED+=("$root/proc")
  mount --rbind /sys "$root/sys"; mount --make-rslave "$root/sys"; MOUNTED+=("$root/sys")
  mount --rbind /dev "$root/dev"; mount --make-rslave "$root/dev"; MOUNTED+=("$root/dev")
  IN_ROOT=$root
}

# in_root CMD...: CMD in the chroot, with a newcomer's plain environment.
in_root() {
  chroot "$IN_ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}
