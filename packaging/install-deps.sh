#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages HSM Studio builds against (README.md, "Set-up").
# Idempotent and fast when everything is present: apt is only called for what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  libtorch-dev libopenblas0-pthread libdnnl-dev
  # Gloo's headers for c10d's ProcessGroupGloo (data-parallel training, docs/distributed.md)
  libgloo-dev
  nlohmann-json3-dev libcli11-dev libsentencepiece-dev
  libgtest-dev libgmock-dev libbenchmark-dev strace
  qt6-base-dev qt6-svg-dev libqcustomplot-dev
  # the fuzzers (fuzz/run.sh): clang, libFuzzer and the sanitizer runtimes, which clang
  # only recommends
  clang libfuzzer-14-dev libclang-rt-14-dev
  # the .deb (make package, packaging/deb.cmake): dpkg-shlibdeps computes its dependencies,
  # help2man writes the man pages; make package-test checks the installed desktop entry,
  # metainfo and man pages
  dpkg-dev help2man desktop-file-utils appstream man-db
  # the sweep's Slurm array job on a single-node Slurm (tests/cli/test_sweep_slurm.sh)
  slurm-wlm munge
  # tests/bench/test_gpu_check_report.py (bench/gpu_check.sh's report); the Slurm test's free port
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
