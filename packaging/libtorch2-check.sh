#!/usr/bin/env bash
# The LibTorch 2.x check (docs/libtorch2.md): Debian 12 has only LibTorch 1.13, Debian 13 ("trixie")
# has libtorch-dev 2.6 (CPU) and, in contrib, libtorch-cuda-dev 2.6. This script debootstraps trixie
# into a folder of its own, installs the build dependencies there, builds the engine, the CLI and the
# engine and CLI tests against LibTorch 2.6 with the source tree bind-mounted read-only, and runs the
# CPU suite with ctest. With --cuda it installs libtorch-cuda-dev instead (its own root) and only
# configures and builds: the CUDA code paths compile and link; nothing runs, no GPU is needed.
# It installs NCCL's header too (libnccl-dev), for data-parallel training over NCCL; --no-nccl
# leaves it out (and removes it from a reused root): the build takes the Gloo fallback.
# Not part of `make test`. Needs root (debootstrap, chroot, mount).
#
#   packaging/libtorch2-check.sh [--cuda [--no-nccl]] [--root DIR] [--src DIR] [--jobs N] [--targets "T ..."]
#                                [--mirror URL] [--prepare] [--no-test] [-- CTEST-ARGS...]
#   --prepare: debootstrap and install only (the downloads), no build
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=packaging/debian-root.sh
. "$here/debian-root.sh"  # debian_mirror; die and say are this script's own (below)
src="$(cd "$here/.." && pwd)"
mode=cpu
root=""
jobs=2
targets=""
mirror=""
run_tests=1
prepare_only=0
nccl=1
ctest_args=()
suite=trixie
marker=.hsm-libtorch2-check  # written into a root this script made; any other folder is refused

die() { echo "libtorch2-check: $*" >&2; exit 1; }
say() { echo "libtorch2-check: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) mode=cuda ;;
    --no-nccl) nccl=0 ;;
    --root) root="${2:?--root needs a folder}"; shift ;;
    --src) src="$(cd "${2:?--src needs a folder}" && pwd)"; shift ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift ;;
    --targets) targets="${2:?--targets needs a list}"; shift ;;
    --mirror) mirror="${2:?--mirror needs a URL}"; shift ;;
    --no-test) run_tests=0 ;;
    --prepare) prepare_only=1 ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts)"
[ -f "$src/CMakeLists.txt" ] || die "'$src' is not the HSM Studio source tree (no CMakeLists.txt)"
command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
# One root per mode: libtorch-dev and libtorch-cuda-dev conflict.
[ -n "$root" ] || root="/var/tmp/hsm-$suite-$mode"
root="$(realpath -m "$root")"

if [ -z "$mirror" ]; then
  mirror="$(debian_mirror)" || die "no Debian mirror (a URI ending in /debian) in /etc/apt/sources.list*; pass --mirror URL"
fi
mirror="${mirror%/}"

stamp() { date +%s; }
elapsed() { echo "$(( $(stamp) - $1 ))s"; }

# --- the root: made here (marker), reused when present, anything else refused ---
t0=$(stamp)
if [ -e "$root" ]; then
  [ -f "$root/$marker" ] || die "'$root' exists but was not made by this script (no $marker); pass another --root"
  say "reusing $root"
else
  partial="$root.partial"
  [ ! -e "$partial" ] || [ -f "$partial/$marker.partial" ] ||
    die "'$partial' exists but was not made by this script; remove it or pass another --root"
  mkdir -p "$partial"
  touch "$partial/$marker.partial"
  say "debootstrap $suite from $mirror into $root"
  debootstrap --variant=minbase --components=main,contrib,non-free,non-free-firmware \
    "$suite" "$partial" "$mirror"
  mv "$partial/$marker.partial" "$partial/$marker"
  mv "$partial" "$root"
  say "debootstrap took $(elapsed "$t0"); $(du -sh --one-file-system "$root" | cut -f1)"
fi
# One run per root at a time: a second one would unmount the first one's /proc, /dev and /src.
exec 9>"$root/$marker.lock"
flock -n 9 || die "another run is using '$root' (lock $root/$marker.lock)"
# apt in the root: the same mirror, with contrib and non-free (libtorch-cuda-dev, the CUDA toolkit).
printf 'deb %s %s main contrib non-free non-free-firmware\n' "$mirror" "$suite" "$mirror" "$suite-updates" \
  >"$root/etc/apt/sources.list.tmp"
mv "$root/etc/apt/sources.list.tmp" "$root/etc/apt/sources.list"

# --- mounts, undone on any exit ---
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -R -l "${mounted[$i]}" || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP  # so that the EXIT trap unmounts on a signal too
mnt() {  # mnt TARGET-IN-ROOT mount-args...
  local target="$root$1"; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}
mnt /proc -t proc proc
mnt /sys --rbind /sys
mount --make-rslave "$root/sys"
mnt /dev --rbind /dev
mount --make-rslave "$root/dev"
mnt /src --bind "$src"
mount -o remount,bind,ro "$root/src"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
                   DEBIAN_FRONTEND=noninteractive CCACHE_DIR=/var/cache/ccache "$@"; }

# --- build dependencies: packaging/install-deps.sh's list less the GUI, fuzz, packaging and Slurm parts ---
t1=$(stamp)
mapfile -t deps < <(sed -n '/^packages=(/,/^)/p' "$src/packaging/install-deps.sh" | sed 's/#.*//' |
  tr ' ' '\n' | grep -vE '^(packages=\(|\)|)$' |
  grep -vE '^(qt6-.*|libqcustomplot-dev|clang|libfuzzer-.*|libclang-rt-.*|dpkg-dev|help2man|desktop-file-utils|appstream|man-db|slurm-wlm|munge)$')
deps+=(ccache)
if [ "$mode" = cuda ]; then
  # libtorch-cuda-dev replaces libtorch-dev; the CUDA toolkit (non-free) for its CMake config's
  # find_package(CUDAToolkit) and the CUDA headers ATen's CUDA headers include.
  # Gloo likewise: libgloo-cuda-dev (contrib) replaces libgloo-dev. NCCL's header (libnccl-dev,
  # contrib; libtorch-cuda-2.6 depends on libnccl2 but its -dev not on libnccl-dev) for c10d's
  # ProcessGroupNCCL.hpp: data-parallel CUDA training over NCCL (--no-nccl: without, the fallback).
  deps=("${deps[@]/libtorch-dev/libtorch-cuda-dev}")
  deps=("${deps[@]/libgloo-dev/libgloo-cuda-dev}" nvidia-cuda-toolkit nvidia-cuda-dev)
  [ "$nccl" -eq 0 ] || deps+=(libnccl-dev)
fi
in_root apt-get update -q
if [ "$mode" = cuda ] && [ "$nccl" -eq 0 ] && in_root dpkg-query -W -f='${Status}' libnccl-dev 2>/dev/null |
  grep -q 'ok installed'; then
  in_root dpkg -r libnccl-dev
fi
if [ "$mode" = cuda ]; then
  # nvidia-cudnn (contrib), which libtorch-cuda-2.6 depends on, is an installer: its postinst fetches
  # cuDNN from developer.download.nvidia.com, which this machine cannot reach, and fails. A stand-in
  # package provides it so that dpkg finishes; the link check uses a stub libcudnn.so.9 (below).
  cudnn_version="$(in_root apt-cache show --no-all-versions nvidia-cudnn | awk '/^Version:/ { print $2 }')"
  [ -n "$cudnn_version" ] || die "nvidia-cudnn is not served by $mirror ($suite contrib)"
  if in_root dpkg-query -W -f='${Status}' nvidia-cudnn 2>/dev/null | grep -qv 'not-installed'; then
    in_root dpkg --purge --force-depends nvidia-cudnn  # a failed earlier install of the real one
  fi
  stub=/var/tmp/hsm-cudnn-absent
  mkdir -p "$root$stub/DEBIAN"
  cat >"$root$stub/DEBIAN/control" <<EOF
Package: hsm-cudnn-absent
Version: 1
Architecture: all
Maintainer: HSM Studio <hsm@localhost>
Provides: nvidia-cudnn (= $cudnn_version)
Conflicts: nvidia-cudnn
Description: stand-in for nvidia-cudnn in the LibTorch 2.x check (no cuDNN: nothing runs on a GPU)
EOF
  in_root dpkg-deb --build "$stub" "$stub.deb" >/dev/null
  in_root dpkg -i "$stub.deb"
fi
# Sizes before anything is fetched: what this install downloads and unpacks.
in_root apt-get install --assume-no -q --no-install-recommends "${deps[@]}" |
  grep -E '^[0-9]+ upgraded|^Need to get|^After this operation' || true
in_root apt-get install -y -q --no-install-recommends "${deps[@]}"
in_root apt-get clean
say "install took $(elapsed "$t1"); root now $(du -sh --one-file-system "$root" | cut -f1)"
in_root dpkg-query -W -f='${Package} ${Version}\n' libtorch-dev libtorch-cuda-dev g++ cmake 2>/dev/null || true

[ "$prepare_only" -eq 0 ] || exit 0

# --- configure and build ---
build="/build/$(basename "$src")-$mode"
t2=$(stamp)
cmake_args=(-S /src -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHSM_BUILD_APP=OFF -DHSM_BUILD_TESTS=ON
            -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ "$mode" = cuda ]; then
  # cuDNN is absent (above): a stub libcudnn.so.9 with the symbols (and symbol version)
  # libtorch_cuda.so takes from it, seen by the linker only, so every other symbol is still
  # resolved for real. Test discovery is left to ctest time: nothing runs here.
  in_root /bin/bash -c 'set -e; d=/build/cudnn-stub; mkdir -p "$d"
    nm -D --undefined-only /usr/lib/x86_64-linux-gnu/libtorch_cuda.so | awk "{ print \$2 }" |
      sed -n "s/@libcudnn\.so\.9\$//p" | sort -u | sed "s/.*/void &(void) {}/" >"$d/stub.c"
    echo "libcudnn.so.9 { global: *; };" >"$d/stub.map"
    gcc -shared -fPIC -o "$d/libcudnn.so.9.tmp" -Wl,-soname,libcudnn.so.9 -Wl,--version-script="$d/stub.map" "$d/stub.c"
    mv "$d/libcudnn.so.9.tmp" "$d/libcudnn.so.9"; echo "cudnn stub: $(wc -l <"$d/stub.c") symbols"'
  cmake_args+=(-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,/build/cudnn-stub
               -DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath-link,/build/cudnn-stub
               -DCMAKE_MODULE_LINKER_FLAGS=-Wl,-rpath-link,/build/cudnn-stub
               -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST)
fi
in_root cmake "${cmake_args[@]}"
say "configure took $(elapsed "$t2")"
t3=$(stamp)
target_args=()
for t in $targets; do target_args+=(--target "$t"); done
in_root ccache -M 5G >/dev/null
in_root nice -n 10 cmake --build "$build" -j "$jobs" "${target_args[@]}"
say "build took $(elapsed "$t3"); $(in_root ccache -s | grep -iE 'hits|misses' | tr '\n' ' ')"

if [ "$mode" = cuda ]; then
  # Link check: the CUDA LibTorch is what hsm links, and it is the CUDA build of LibTorch.
  in_root /bin/sh -c "ldd '$build/engine/cli/hsm' | grep -E 'libtorch|libc10|libnccl' || true"
  say "cuda: data-parallel CUDA training over NCCL (HSM_DATA_PARALLEL_NCCL): $(in_root sed -n \
    's/^HSM_DATA_PARALLEL_NCCL:INTERNAL=//p' "$build/CMakeCache.txt")"
  say "cuda: configured and built against libtorch-cuda-dev; nothing run (no GPU)"
  exit 0
fi

# --- the CPU suite ---
if [ "$run_tests" -eq 1 ]; then
  t4=$(stamp)
  status=0
  in_root /bin/bash -c 'cd "$0" && exec nice -n 10 ctest -j "$1" --output-on-failure "${@:2}"' \
    "$build" "$jobs" "${ctest_args[@]}" || status=$?
  say "ctest took $(elapsed "$t4") (exit $status)"
  exit "$status"
fi
