#!/bin/bash
# ctest's verdict is what the tests did (issue 65): the test programs' main (tests/gtest_main.cpp,
# tests/test_run_guard.h) fails a program that a test ended early with exit(0), and ends a run whose
# tests were skipped (none failed) with the line SKIPPED_REGEX matches; every ctest test that runs a
# GoogleTest program reads its output with that expression or GoogleTest's own "[  SKIPPED ]", so a
# skipped test shows as skipped in ctest's summary, not as passed.
#   usage: check_test_runs.sh PROBE BUILD_DIR SKIPPED_REGEX
#   PROBE: tests/infra/run_guard_probe.cpp built; BUILD_DIR: the build folder (its ctest files)
set -u
probe=${1:?usage: check_test_runs.sh PROBE BUILD_DIR SKIPPED_REGEX}
build=${2:?usage: check_test_runs.sh PROBE BUILD_DIR SKIPPED_REGEX}
skipped=${3:?usage: check_test_runs.sh PROBE BUILD_DIR SKIPPED_REGEX}
fail=0
say_failed() {
  echo "FAILED $1"
  echo "$2" | tail -15 | sed 's/^/    /'
  fail=1
}

# run FILTER: the probe's output and exit status (in $out and $rc).
run() {
  out=$(TEST_PREMATURE_EXIT_FILE='' "$probe" --gtest_filter="$1" 2>&1)
  rc=$?
}

run 'Probe.Passes:Probe.ExitsEarly:Probe.RunsAfterTheExit'
if [[ $rc -ne 1 ]] || ! grep -qF "ended before its tests finished (exit() called in Probe.ExitsEarly)" <<<"$out" ||
   grep -qF "[       OK ] Probe.RunsAfterTheExit" <<<"$out"; then
  say_failed "a test that calls exit(0) must fail its program (exit 1, saying so): exit $rc" "$out"
else
  echo "ok     a test that calls exit(0) fails its program"
fi

run 'Probe.Passes:Probe.AForkedChildExits'
if [[ $rc -ne 0 ]] || grep -qE "$skipped|ended before" <<<"$out"; then
  say_failed "passing tests (one forks a child that calls exit) must pass, with no skipped line: exit $rc" "$out"
else
  echo "ok     passing tests pass, a forked child's exit() left alone"
fi

run 'Probe.Passes:Probe.Skips'
if [[ $rc -ne 0 ]] || ! grep -qE "^$skipped\$" <<<"$out" || ! grep -qF "hsm-gtest: 1 of 2 tests skipped" <<<"$out"; then
  say_failed "a skipped test beside a passing one must end with the skipped line: exit $rc" "$out"
else
  echo "ok     a skipped test ends the run with the line ctest reads as skipped"
fi

run 'Probe.Skips:Probe.Fails'
if [[ $rc -ne 1 ]] || grep -qE "$skipped" <<<"$out"; then
  say_failed "a failed test beside a skipped one must fail, without the skipped line: exit $rc" "$out"
else
  echo "ok     a failure beside a skip is a failure"
fi

# Every ctest test that runs a GoogleTest program (a --gtest_filter in its command) reads skips.
listing=$(cd "$build" && ctest --show-only=json-v1 2>&1) || { say_failed "ctest --show-only=json-v1 in $build" "$listing"; exit 1; }
unread=$(python3 -c '
import json, re, sys
tests = json.loads(sys.stdin.read())["tests"]
skipped = sys.argv[1]
bad = []
n = 0
for t in tests:
    if not any(str(a).startswith("--gtest_filter=") for a in t.get("command", [])):
        continue
    n += 1
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    regexes = props.get("SKIP_REGULAR_EXPRESSION", [])
    regexes = [regexes] if isinstance(regexes, str) else regexes
    if skipped not in regexes and not any("SKIPPED" in r for r in regexes):
        bad.append(t["name"])
print("%d %s" % (n, " ".join(bad[:20]) + (" ... (%d in all)" % len(bad) if len(bad) > 20 else "")))
' "$skipped" <<<"$listing")
count=${unread%% *}
missing=${unread#* }
if [[ $count -lt 10 ]]; then
  say_failed "only $count GoogleTest programs among ctest's tests: the listing was not read" "$listing"
elif [[ -n ${missing// /} ]]; then
  say_failed "ctest tests that would show a skipped test as passed (no SKIP_REGULAR_EXPRESSION):" "$missing"
else
  echo "ok     all $count ctest tests of GoogleTest programs show a skip as skipped"
fi

if ((fail)); then
  echo "ctest's verdict would not be what the tests did (tests/check_test_runs.sh)"
  exit 1
fi
echo "test runs: an early exit fails, a skip shows as skipped"
