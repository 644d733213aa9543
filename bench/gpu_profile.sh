#!/usr/bin/env bash
# Where a training step's GPU time goes (issue 49): one call on a GPU machine.
#
#   bench/gpu_profile.sh [--out DIR] [--batch N] [--models "hsm_ab gpt hybrid_0_6"]
#                        [--compiled "hsm_ab"] [--debs DIR] [--build DIR] [--jobs N] [--ab "VAR=VALUE ..."]
#
# Builds hsm against the machine's PyTorch as bench/gpu_check.sh does (the Debian .debs of what the
# machine lacks unpacked from DIR, default .gpu-debs/), then profiles one training step of each
# model: `hsm bench --profile` (LibTorch's Kineto profiler, the eager step) and the plain PyTorch
# peer (bench/gpu_reference_speed.py --profile: eager, and compiled for the --compiled models).
# Each profile sums the kernels' device time by name; OUT/summary.txt holds them all, with the
# rates (OUT/bench.json, OUT/peer.jsonl). HSM_* variables set for the run reach hsm bench, so one
# call can A/B a switch: `--ab "HSM_CUDA_FUSED=0"` repeats hsm bench with it. OUT (default
# gpu_profile_out/) must be new, empty, or an earlier OUT of this script; the build goes into a private
# temporary folder removed at the end (or --build DIR). A development tool, not part of `make test`.
set -u
out=${OUT:-gpu_profile_out}
batch=256
models="hsm_ab gpt hybrid_0_6"
compiled="hsm_ab"
debs=.gpu-debs
build=""
jobs=$(nproc 2> /dev/null || echo 4)
ab=""
me=gpu_profile
# shellcheck source=bench/script_args.sh
. "$(dirname "$0")/script_args.sh"
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$(value "$@") || exit 2; shift 2 ;;
    --batch) batch=$(value "$@") || exit 2; shift 2 ;;
    --models) models=$(value "$@") || exit 2; shift 2 ;;
    --compiled) compiled=$(value "$@") || exit 2; shift 2 ;;
    --debs) debs=$(value "$@") || exit 2; shift 2 ;;
    --build) build=$(value "$@") || exit 2; shift 2 ;;
    --jobs) jobs=$(value "$@") || exit 2; shift 2 ;;
    --ab) ab=$(value "$@") || exit 2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case $batch in ''|0|*[!0-9]*) die "--batch is a whole number from 1, not '$batch'" ;; esac
case $jobs in ''|0|*[!0-9]*) die "--jobs is a whole number from 1, not '$jobs'" ;; esac
[ -f CMakeLists.txt ] && [ -d engine ] || die "run from the repository root"
repo=$(pwd)
# OUT is this script's: a folder it made before (its marker) has its files replaced; any other
# folder that is not empty is refused, so nothing this script did not write is overwritten.
own_folder --out "$out" .hsm_gpu_profile
out=$(cd -- "$out" && pwd) || exit 2
# What it writes in OUT, new each time: a file or a link left there by anyone is removed, not
# written through.
rm -f -- "$out/build.log" "$out/summary.txt" "$out/bench.json" "$out/bench_ab.json" "$out/peer.jsonl" \
  "$out/traces.tar.gz"
# The unpacked .debs, the build (unless --build names one) and the traces: a private folder, removed
# however the script ends (the summary and a tarball stay in OUT).
work=$(mktemp -d "${TMPDIR:-/tmp}/hsm_gpu_profile.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
[ -n "$build" ] || build=$work/build
t0=$(date +%s)
say() { echo "[gpu_profile $(($(date +%s) - t0))s] $*"; }

# The packages the machine lacks, as gpu_check.sh's deps stage unpacks them.
prefix=$work/deps
cmake_prefix=""
if ! { pkg-config --exists sentencepiece 2> /dev/null && [ -d /usr/include/nlohmann ] && [ -d /usr/include/CLI ]; }; then
  for d in "$debs"/*.deb; do dpkg -x "$d" "$prefix" || exit 1; done
  for pc in "$prefix"/usr/lib/*/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s#^prefix=/usr\$#prefix=$prefix/usr#" "$pc"
  done
  export PATH=$prefix/usr/bin:$PATH
  export PKG_CONFIG_PATH=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_prefix=$prefix/usr
fi
if ! command -v ninja > /dev/null; then
  for d in "$(dirname "$(command -v python3)")" "$(dirname "$(readlink -f "$(command -v python3)")")"; do
    [ -x "$d/ninja" ] && PATH=$PATH:$d && break
  done
fi
torch_dir=$(python3 -c 'import torch.utils, os; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')
say "configure and build hsm (TORCH_DIR=$torch_dir)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHSM_BUILD_APP=OFF -DHSM_BUILD_TESTS=OFF \
  -DTORCH_DIR="$torch_dir" ${cmake_prefix:+-DCMAKE_PREFIX_PATH="$cmake_prefix"} > "$out/build.log" 2>&1 &&
  cmake --build "$build" -j "$jobs" --target hsm >> "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
hsm=$build/engine/cli/hsm
say "built"

summary=$out/summary.txt
: > "$summary"
# shellcheck disable=SC2086
"$hsm" bench $models --batch "$batch" --steps 10 --no-decode --device cuda --profile "$work/hsm_" --json \
  > "$out/bench.json" 2> "$work/bench.err" || { tail -20 "$work/bench.err"; }
say "hsm bench done"
if [ -n "$ab" ]; then
  # shellcheck disable=SC2086
  env $ab "$hsm" bench $models --batch "$batch" --steps 10 --no-decode --device cuda --profile "$work/ab_" --json \
    > "$out/bench_ab.json" 2> "$work/bench_ab.err" || { tail -20 "$work/bench_ab.err"; }
  say "hsm bench with $ab done"
fi
# shellcheck disable=SC2086
python3 "$repo/bench/gpu_reference_speed.py" --models $models --batch "$batch" --steps 10 --profile "$work" \
  > "$out/peer.jsonl" 2> "$work/peer.err" || tail -20 "$work/peer.err"
if [ -n "$compiled" ]; then
  # shellcheck disable=SC2086
  python3 "$repo/bench/gpu_reference_speed.py" --models $compiled --batch "$batch" --steps 10 --compile \
    --profile "$work" >> "$out/peer.jsonl" 2>> "$work/peer.err" || tail -20 "$work/peer.err"
fi
say "peer done"
for f in "$work"/hsm_*.kernels.txt "$work"/ab_*.kernels.txt "$work"/peer_*.kernels.txt; do
  [ -f "$f" ] || continue
  { echo "==== $(basename "$f")"; head -45 "$f"; echo; } >> "$summary"
done
grep -h -o '"name":"[^"]*"\|"train_tokens_per_s":[0-9.e+]*\|"train_eager_tokens_per_s":[0-9.e+]*' \
  "$out/bench.json" "$out"/bench_ab.json 2> /dev/null | paste -sd' ' >> "$summary"
cat "$out/peer.jsonl" >> "$summary"
tar -C "$work" -czf "$out/traces.tar.gz" $(cd "$work" && ls hsm_hsm_ab_*.trace.json peer_hsm_ab_*.trace.json 2> /dev/null)
say "summary in $summary"
