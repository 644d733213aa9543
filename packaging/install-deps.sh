#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages HSM Studio builds against (README.md, "Set-up").
# Idempotent and fast when everything is present: apt is only called for what is missing.
# No package name here is written for one release: where a name carries a version (LLVM's
# fuzzer runtime), it is read from what this release's default `clang` is; a package this
# release does not have is named, with what to install instead, before anything is installed.
# Tried on Debian 12 (bookworm) and Debian 13 (trixie): docs/releases.md.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  libtorch-dev libopenblas0-pthread libdnnl-dev
  # Gloo's headers for c10d's ProcessGroupGloo (data-parallel training, docs/distributed.md)
  libgloo-dev
  nlohmann-json3-dev libcli11-dev libsentencepiece-dev
  libgtest-dev libgmock-dev libbenchmark-dev strace
  qt6-base-dev qt6-svg-dev libqcustomplot-dev
  # the GUI test that starts the studio on a real (virtual) display: xvfb-run needs xauth
  xvfb xauth
  # the fuzzers (fuzz/run.sh): clang, with libFuzzer and the sanitizer runtimes of its LLVM
  # version, which clang only recommends (added below: llvm_packages)
  clang
  # the .deb (make package, packaging/deb.cmake): dpkg-shlibdeps computes its dependencies,
  # CPack's DEB generator runs `file` on every binary, help2man writes the man pages;
  # make package-test checks the installed desktop entry, metainfo and man pages
  dpkg-dev file help2man desktop-file-utils appstream man-db
  # the sweep's Slurm array job on a single-node Slurm (tests/cli/test_sweep_slurm.sh)
  slurm-wlm munge
  # tests/bench/test_gpu_check_report.py (bench/gpu_check.sh's report); the Slurm test's free port
  python3
)

# What to install instead, for a package a release (or a derivative) may not have.
instead() {
  case "$1" in
    libtorch-dev) echo "LibTorch 1.13 or later from pytorch.org, then: make test TORCH_DIR=/path/to/libtorch/share/cmake/Torch" ;;
    libgloo-dev) echo "nothing: data-parallel training is then left out of the build (docs/distributed.md)" ;;
    libfuzzer-*-dev|libclang-rt-*-dev) echo "the libFuzzer and compiler-rt packages of your clang's LLVM version (apt-cache search libfuzzer)" ;;
    libqcustomplot-dev) echo "QCustomPlot 2.1 built for Qt 6 (its CMake package QCustomPlotQt6)" ;;
    slurm-wlm|munge) echo "nothing: the Slurm test then skips, saying so" ;;
    *) echo "this release's package that provides it (apt-cache search ${1%%-dev})" ;;
  esac
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# LLVM's major version: the installed clang's, or (before it is installed) the version the
# release's `clang` package depends on (clang-14 on Debian 12, clang-19 on Debian 13).
llvm_version() {
  local v=""
  if command -v clang >/dev/null; then
    v="$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -1)"
  fi
  if [ -z "$v" ]; then
    v="$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -1)"
  fi
  echo "$v"
}
llvm_packages() {
  local v
  v="$(llvm_version)"
  [ -n "$v" ] || return 1
  echo "libfuzzer-$v-dev libclang-rt-$v-dev"
}

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
llvm="$(llvm_packages || true)"
if [ -n "$llvm" ]; then
  for p in $llvm; do installed "$p" || missing+=("$p"); done
fi

if [ ${#missing[@]} -eq 0 ] && [ -n "$llvm" ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
if [ -z "$llvm" ]; then  # clang not installed yet: its version from the package lists just read
  llvm="$(llvm_packages)" || { echo "install-deps: this release has no 'clang' package; install clang, then run again" >&2; exit 1; }
  for p in $llvm; do installed "$p" || missing+=("$p"); done
fi

# Every name must be one this release has, before anything is installed.
release="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-this release}")" || release="this release"
absent=0
for p in "${missing[@]}"; do
  candidate="$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')"
  if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
    echo "install-deps: $release has no package '$p'; install instead: $(instead "$p")" >&2
    absent=1
  fi
done
[ "$absent" -eq 0 ] || exit 1

echo "install-deps: installing ${missing[*]}"
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
