#!/usr/bin/env bash
# `make package-test`: installs the .deb as a user would (apt, which pulls in its
# dependencies), runs the installed programs from /tmp, far from the source tree, checks the
# desktop entry, the metainfo and the man pages, then removes the package and whatever apt
# installed for it, even when a check fails: the machine is left as it was found.
# Needs root (or sudo); usage: package-test.sh BUILD_DIR
set -euo pipefail
die() { echo "package-test: $*" >&2; exit 2; }
[ $# -le 1 ] || die "one argument, the build folder (usage: package-test.sh BUILD_DIR)"
if [ $# -eq 1 ]; then
  case $1 in
    '') die "the build folder is empty: name one (usage: package-test.sh BUILD_DIR)" ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (usage: package-test.sh BUILD_DIR)" ;;
  esac
fi
[ -d "${1:-build}" ] || die "no build folder '${1:-build}' (usage: package-test.sh BUILD_DIR)"
build_dir=$(cd -- "${1:-build}" && pwd)
debs=("$build_dir"/hsm-studio_*.deb)
[ -f "${debs[0]}" ] || { echo "package-test: no $build_dir/hsm-studio_*.deb; run \`make package\` first" >&2; exit 1; }
deb=$(ls -t "${debs[@]}" | head -1)  # the newest: an older one may be from another release

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || { echo "package-test: installing a package needs root or password-less sudo" >&2; exit 1; }
  sudo="sudo"
fi
if dpkg-query -W -f='${Status}' hsm-studio 2>/dev/null | grep -q 'install ok installed'; then
  echo "package-test: hsm-studio is already installed here; remove it first (this test removes what it installs)" >&2
  exit 1
fi

data=/usr/share/hsm-studio
app_id=$(sed -n 's/^set(HSM_APP_ID "\(.*\)")$/\1/p' "$(dirname "$0")/deb.cmake")
work=$(mktemp -d /tmp/hsm-package-test.XXXXXX)
before="$work/packages-before"
dpkg-query -W -f='${Package}\n' | sort >"$before"

remove() {
  local status=$?
  echo "package-test: removing hsm-studio and what apt installed for it"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q hsm-studio >/dev/null || status=1
  # What apt installed for it: new since the start and marked as installed automatically (a
  # dependency); a package someone installed by hand meanwhile is marked manual and stays.
  local added
  added=$(dpkg-query -W -f='${Package}\n' | sort | comm -13 "$before" - |
          comm -12 - <(apt-mark showauto | sort) | tr '\n' ' ')
  if [ -n "$added" ]; then
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $added >/dev/null || status=1
  fi
  rm -rf "$work"
  if [ "$status" -eq 0 ]; then echo "package-test: passed"; else echo "package-test: FAILED" >&2; fi
  exit "$status"
}
trap remove EXIT

# The package says which release it was built for (packaging/deb.cmake): its Depends are this
# machine's libraries, so a Debian 12 package must not pass for a Debian 13 one.
release=$(. /etc/os-release && if [ -z "${VERSION_ID:-}" ]; then :; elif [ "$ID" = debian ]; then echo "deb$VERSION_ID"; else echo "$ID$VERSION_ID"; fi)
if [ -n "$release" ]; then
  case "$(dpkg-deb -f "$deb" Version)" in
    *"+$release") ;;
    *) echo "package-test: $(basename "$deb") is version $(dpkg-deb -f "$deb" Version), not built for $release" >&2; exit 1 ;;
  esac
fi
echo "package-test: installing $(basename "$deb")"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }

cd "$work"  # nowhere near the source or build tree: the programs must find their files themselves
step() { echo "package-test: $*"; }
step "versions: $(hsm --version) / $(hsm-studio --version)"
step "hsm generate on the installed hsm_ab model"
hsm generate "$data/models/hsm_ab" --prompt "Once upon a time" --max-tokens 20 --seed 1 | tee generated.txt
[ "$(wc -w <generated.txt)" -gt 4 ] || { echo "package-test: hsm generate wrote almost nothing" >&2; exit 1; }
step "hsm-studio --smoke on the installed starter corpus"
QT_QPA_PLATFORM=offscreen hsm-studio --smoke starter --data "$data/corpus/tinystories-starter.txt" \
  --steps "${HSM_PACKAGE_TEST_STEPS:-4}" --max-tokens 20 --out "$work/smoke" --json >smoke.json
grep -q '"error":null' smoke.json || { cat smoke.json >&2; exit 1; }
echo "  $(grep -o '"steps":[0-9]*' smoke.json), $(grep -o '"generated_tokens":[0-9]*' smoke.json)"
step "desktop-file-validate"
desktop-file-validate "/usr/share/applications/$app_id.desktop"
step "appstreamcli validate"
appstreamcli validate --no-net "/usr/share/metainfo/$app_id.metainfo.xml"
step "man pages"
man -w hsm
man -w hsm-studio
