#!/usr/bin/env bash
# A newcomer's machine, proved: a fresh minimal Debian root (debootstrap --variant=minbase), a
# clone of this repository inside it, the README's `make test` run there as a newcomer runs it,
# and the studio started there with `make run` under Xvfb and a window manager (openbox), with a
# screenshot. Debian 13 ("trixie", the current stable) by default; `--suite bookworm` does the
# same for Debian 12. Not part of `make test` (it downloads a whole distribution's worth of
# packages); run it before a submission that touches the build, the dependencies or the studio's
# layout (docs/releases.md). Needs root (debootstrap, chroot, mounts).
#
#   packaging/fresh-check.sh [--suite trixie|bookworm] [--out DIR] [--ref REV] [--jobs N]
#                            [--work DIR] [--mirror URL] [--keep] [--again] [--no-studio]
#   --out DIR   where the result goes (a folder this script makes; default ./fresh-check-SUITE-DATE)
#   --ref REV   what is cloned (default HEAD: uncommitted changes are not part of the check)
#   --work DIR  where the roots live (default /var/tmp/hsm-fresh-check); the pristine minbase of each
#               suite is kept there and copied for each run, so a run starts from a fresh root
#   --keep      keep this run's root afterwards (its path is printed); --again reuses the kept
#               root: the clone is moved to REV and `make test` runs again there (not fresh)
#   --no-studio leave out the studio under Xvfb
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/.." && pwd)"
# shellcheck source=packaging/debian-root.sh
. "$here/debian-root.sh"

suite=trixie
out=""
ref=HEAD
jobs=2
work=/var/tmp/hsm-fresh-check
mirror=""
keep=0
again=0
studio=1

while [ $# -gt 0 ]; do
  case "$1" in
    --suite|--out|--ref|--jobs|--work|--mirror)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"
      case "$1" in
        --suite) suite="$2" ;; --out) out="$2" ;; --ref) ref="$2" ;; --jobs) jobs="$2" ;;
        --work) work="$2" ;; --mirror) mirror="$2" ;;
      esac
      shift ;;
    --keep) keep=1 ;;
    --again) again=1; keep=1 ;;
    --no-studio) studio=0 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
case "$suite" in trixie|bookworm) ;; *) die "--suite is trixie (Debian 13) or bookworm (Debian 12), not '$suite'" ;; esac
[[ "$jobs" =~ ^[1-9][0-9]?$ ]] || die "--jobs is a whole number from 1 to 99, not '$jobs'"
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts)"
command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
commit="$(git -C "$src" rev-parse --verify --quiet "$ref^{commit}")" || die "'$ref' is not a commit of $src"
[ -n "$mirror" ] || mirror="$(debian_mirror)" || die "no Debian mirror in /etc/apt/sources.list*; pass --mirror URL"

# --- the result folder: made here, never one that exists ---
[ -n "$out" ] || out="$PWD/fresh-check-$suite-$(date -u +%Y%m%d-%H%M%S)"
out="$(realpath -m "$out")"
[ ! -e "$out" ] || die "'$out' exists already; name a folder that does not (--out)"
mkdir -p "$out"
log="$out/fresh-check.log"
exec > >(tee -a "$log") 2>&1
t0=$(stamp)
say "$suite, commit $(git -C "$src" log -1 --format='%h %s' "$commit"), $(nproc) cores, $(date -u '+%F %T') UTC"
say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"

# --- the roots: a pristine minbase kept per suite, and this run's fresh copy of it ---
mkdir -p "$work"
base="$work/base-$suite"
run_root="$work/run-$suite"
make_root "$base" "$suite" "$mirror"
if [ "$again" -eq 1 ]; then
  [ -f "$run_root/$ROOT_MARKER" ] || die "--again: no kept root at $run_root (run once with --keep first)"
  say "reusing the kept root $run_root (not fresh: the clone moves to $commit)"
else
  remove_root "$run_root"
  copy_root "$base" "$run_root"
fi
[ "$keep" -eq 1 ] || trap_exit_also "remove_root '$run_root'"
mount_root "$run_root"
cp /etc/resolv.conf "$run_root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$run_root/check-out"
mount --bind "$out" "$run_root/check-out"
MOUNTED+=("$run_root/check-out")

# --- a newcomer's first steps: git and make, then the clone (as root, in root's home folder) ---
in_root apt-get update -q
in_root apt-get install -y -q --no-install-recommends git make ca-certificates
say "versions: $(in_root dpkg-query -W -f='${Package} ${Version}, ' git make | sed 's/, $//')"
mkdir -p "$run_root/src.git"
mount --bind -o ro "$(git -C "$src" rev-parse --absolute-git-dir)" "$run_root/src.git"
MOUNTED+=("$run_root/src.git")
if [ "$again" -eq 0 ]; then
  in_root git clone -q /src.git /root/hsm-studio
fi
in_root git -C /root/hsm-studio fetch -q /src.git "$commit"
in_root git -C /root/hsm-studio -c advice.detachedHead=false checkout -q "$commit"

# --- make test, as the README says ---
t1=$(stamp)
status=0
in_root /bin/bash -c 'cd /root/hsm-studio && make test JOBS="$0"' "$jobs" >"$out/make-test.log" 2>&1 || status=$?
say "make test: exit $status after $(elapsed "$t1") (log: $out/make-test.log)"
grep -E 'tests passed|tests failed|package-test: (passed|FAILED)|^fuzz' "$out/make-test.log" | tail -8 | sed 's/^/  /' || true
in_root dpkg-query -W -f='${Package} ${Version}\n' libtorch-dev qt6-base-dev g++ clang libqcustomplot-dev \
  >"$out/versions.txt" 2>/dev/null || true
sed 's/^/  /' "$out/versions.txt"
for deb in "$run_root/root/hsm-studio/build/"hsm-studio_*.deb; do
  [ -f "$deb" ] && say "package: $(basename "$deb")"
done

# --- the studio: make run under Xvfb with openbox, a screenshot after it has settled ---
studio_status=skipped
if [ "$studio" -eq 1 ] && [ "$status" -eq 0 ]; then
  # Xvfb, openbox and ImageMagick's import are the check's, not the product's dependencies.
  in_root apt-get install -y -q --no-install-recommends xvfb xauth openbox imagemagick >/dev/null
  studio_status=0
  in_root /bin/bash -c '
    cd /root/hsm-studio
    Xvfb :7 -screen 0 1600x1000x24 -nolisten tcp >/check-out/xvfb.log 2>&1 & x=$!
    sleep 2
    export DISPLAY=:7
    openbox >/check-out/openbox.log 2>&1 & wm=$!
    sleep 1
    make run >/check-out/make-run.log 2>&1 & app=$!
    for i in $(seq 1 60); do sleep 1; kill -0 $app 2>/dev/null || break; done
    alive=0; kill -0 $app 2>/dev/null && alive=1
    import -window root /check-out/studio.png || true
    pkill -x hsm-studio || true  # by name: a pattern would match this shell'"'"'s own command line
    kill $wm $x 2>/dev/null || true
    wait $app 2>/dev/null
    [ "$alive" -eq 1 ]' || studio_status=$?
  if [ "$studio_status" -eq 0 ]; then
    say "studio: make run showed its window for 60 s (screenshot: $out/studio.png)"
  else
    say "studio: make run ended before 60 s (log: $out/make-run.log)"; tail -5 "$out/make-run.log" | sed 's/^/  /'
  fi
fi

result=passed
[ "$status" -eq 0 ] && { [ "$studio_status" = 0 ] || [ "$studio_status" = skipped ]; } || result=FAILED
{
  echo "suite: $suite"
  echo "commit: $commit"
  echo "date: $(date -u '+%F %T') UTC"
  echo "make_test_exit: $status"
  echo "studio: $studio_status"
  echo "result: $result"
  echo "seconds: $(( $(stamp) - t0 ))"
} >"$out/result.txt"
[ "$keep" -eq 1 ] && say "the root is kept at $run_root (--again reuses it)"
say "$result in $(elapsed "$t0"): $out/result.txt"
[ "$result" = passed ]
