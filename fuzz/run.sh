#!/usr/bin/env bash
# Builds the fuzzers (clang, libFuzzer, ASan + UBSan; no LibTorch) in a build tree of their
# own and runs each for a bounded time on its seed corpus; fails if any of them finds a
# crash, a hang, a leak or a sanitizer report. `make fuzz` and `make test` call it.
#
#   fuzz/run.sh                      every target, FUZZ_SECONDS (default 30) each
#   FUZZ_SECONDS=600 fuzz/run.sh corpus metrics
#
# Environment: FUZZ_SECONDS (time per target), FUZZ_BUILD_DIR (default build-fuzz),
# FUZZ_JOBS (build jobs, default nproc), FUZZ_ARGS (more libFuzzer flags, e.g. -seed=1).
# What each run found lands in $FUZZ_BUILD_DIR: logs/<target>.log, the corpus it grew in
# corpus/<target>/ (kept between runs), and a failing input in artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(safetensors config tokenizer corpus metrics diagnostics_log traces)
seconds=${FUZZ_SECONDS:-30}
build=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_$t.cpp" ] || { echo "fuzz: no target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

# The build folder is this script's: new, empty, or one it made (its marker, or a fuzz build
# tree of CMake's from before the marker). Anything else is refused before a file is written there.
marker=.hsm-fuzz-build
case $build in
  *[[:cntrl:]]*|-*) echo "fuzz: FUZZ_BUILD_DIR $(printf %q "$build") is not a plain folder name" >&2; exit 2 ;;
esac
if [ -L "$build" ] || { [ -e "$build" ] && [ ! -d "$build" ]; }; then
  echo "fuzz: FUZZ_BUILD_DIR '$build' is not a folder (a file or a link): name a new folder" >&2
  exit 2
fi
if [ -d "$build" ] && [ -n "$(ls -A -- "$build")" ] && ! { [ -f "$build/$marker" ] && [ ! -L "$build/$marker" ]; } &&
   ! grep -qx 'HSM_BUILD_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz: '$build' is not empty and not a build folder of this script's (no $marker): set FUZZ_BUILD_DIR to a new folder" >&2
  exit 2
fi

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found; run packaging/install-deps.sh" >&2; exit 1; }
done
mkdir -p -- "$build"
touch "$build/$marker"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHSM_BUILD_FUZZ=ON >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/fuzz_}" hsm_sentencepiece

# The targets write their inputs to files under TMPDIR and remove them when they exit; a
# crashed target cannot, so TMPDIR is a folder of this script's, removed at the end. Memory
# (/dev/shm) when there is one: cheaper than a disk for a file rewritten per input.
tmp_parent=$PWD/$build
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp_parent=/dev/shm
scratch=$(mktemp -d "$tmp_parent/hsm-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

mkdir -p "$build/logs" "$build/artifacts"
# One target's whole session; its exit status beside its log. The targets run $jobs at a time
# (each fuzzer is one process on one core), so the wall time is seconds x targets / jobs.
fuzz_one() {
  local t=$1 log=$build/logs/$1.log dict=()
  mkdir -p "$build/corpus/$t"
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  # -timeout: an input that takes 10 s is a hang; the grown corpus comes first, so new
  # inputs go there and the seeds in the repository are only read.
  set +e
  TMPDIR=$scratch "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "${dict[@]}" ${FUZZ_ARGS:-} \
    "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
  echo $? >"$build/logs/$t.rc"
}
running=0
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.rc"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

failed=()
printf '%-12s %12s %8s %10s  %s\n' target executions seconds "exec/s" result
for t in "${targets[@]}"; do
  log=$build/logs/$t.log
  rc=$(cat "$build/logs/$t.rc" 2>/dev/null || echo 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    printf '%-12s %12s %8s %10s  %s\n' "$t" "${runs:-?}" "${took:-?}" "${rate:-?}" ok
  else
    printf '%-12s %12s %8s %10s  %s\n' "$t" "${runs:-?}" "${took:-?}" "${rate:-?}" "FAILED (exit $rc)"
    failed+=("$t")
    echo "---- $log: what it found ----"
    # From the first report line on (sanitizer, uncaught exception, broken promise, timeout).
    grep -v -E '^#[0-9]+|^INFO:' "$log" |
      sed -n '/ERROR\|runtime error\|terminate called\|broken promise\|Test unit written/,$p' | head -30 | cut -c1-240
    echo "---- the input is saved as $(sed -n "s/.*Test unit written to //p" "$log" | tail -1)"
    echo "---- reproduce: $build/fuzz/fuzz_$t <that file>"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} failed; fix the reader, then add the input to fuzz/corpus/<target>/ as" \
       "regression-<what> and a test to the reader's suite (fuzz/README.md)" >&2
  exit 1
fi
