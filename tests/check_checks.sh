#!/bin/bash
# The source checks (tests/check_layers.sh, tests/check_run_file_names.sh) run on small trees made
# here, each holding one thing they must find (issue 65: a CUDA source, an #include <hsm/...>, a
# file name composed as "/checkpoints/" or "config.json.tmp"), and one clean tree they must pass.
#   usage: check_checks.sh TESTS_DIR      (the repository's tests/)
set -u
tests=$(cd "${1:?usage: check_checks.sh TESTS_DIR}" && pwd) || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/hsm_check_checks.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
fail=0

# expect NAME finds|passes WHAT_IT_SAYS CHECK ARGS...: the check's exit (1 or 0) and a line of its output.
expect() {
  local name=$1 want=$2 says=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $want == finds && $rc -ne 1 ]] || [[ $want == passes && $rc -ne 0 ]]; then
    echo "FAILED $name: exit $rc, expected $([[ $want == finds ]] && echo 1 || echo 0); it said:"
    echo "$out" | sed 's/^/    /'
    fail=1
  elif ! grep -qF -- "$says" <<<"$out"; then
    echo "FAILED $name: its output does not say '$says'; it said:"
    echo "$out" | sed 's/^/    /'
    fail=1
  else
    echo "ok     $name"
  fi
}

# An engine tree: ENGINE_DIR FILE CONTENT (the public header the table knows is there too).
engine_with() {
  local root=$work/$1
  mkdir -p "$root/src/kernels/cuda" "$root/src/io" "$root/src/train" "$root/include/hsm"
  printf '#pragma once\n' > "$root/include/hsm/trainer.h"
  printf '#pragma once\n' > "$root/src/train/trainer_impl.h"
  printf '%b' "$3" > "$root/$2"
  echo "$root"
}
layers=$tests/check_layers.sh
expect "layers: a clean tree passes" passes "no include points up" \
  bash "$layers" "$(engine_with clean src/io/files.cpp '#include "io/other.h"\n#include <torch/torch.h>\n')"
expect "layers: a .cu source that includes a higher layer" finds \
  'src/kernels/cuda/fused.cu:2: #include "train/trainer_impl.h" points up' \
  bash "$layers" "$(engine_with cu src/kernels/cuda/fused.cu '#include <cuda.h>\n#include "train/trainer_impl.h"\n')"
expect "layers: a .cuh header that includes a higher layer" finds \
  'src/kernels/cuda/fused.cuh:1: #include "train/trainer_impl.h" points up' \
  bash "$layers" "$(engine_with cuh src/kernels/cuda/fused.cuh '#include "train/trainer_impl.h"\n')"
expect "layers: #include <hsm/...> of a higher layer" finds \
  'src/io/files.cpp:1: #include "hsm/trainer.h" points up: io/ (layer 1) includes train/' \
  bash "$layers" "$(engine_with angle src/io/files.cpp '#include <hsm/trainer.h>\n')"
expect "layers: #include <hsm/...> of a header in no layer" finds \
  'hsm/nowhere.h is in no layer' \
  bash "$layers" "$(engine_with nowhere src/io/files.cpp '#include <hsm/nowhere.h>\n')"

# A repository tree with one app/ source: NAME CONTENT.
repo_with() {
  local root=$work/$1
  mkdir -p "$root/engine/src/run" "$root/engine/cli" "$root/engine/include" "$root/app"
  printf 'const char* kConfig = "config.json";\n' > "$root/engine/src/run/run_folder_files.cpp"
  printf '%b' "$2" > "$root/app/${3:-view.cpp}"
  echo "$root"
}
names=$tests/check_run_file_names.sh
expect "run file names: a clean tree passes" passes "spelled in engine/src/run/run_folder_files.cpp only" \
  bash "$names" "$(repo_with clean 'auto a = "config"; auto b = "the checkpoints of a run"; auto c = "json";\n')"
expect "run file names: the exact name" finds 'app/view.cpp:1:auto p = dir + "/config.json";' \
  bash "$names" "$(repo_with exact 'auto p = dir + "/config.json";\n')"
expect "run file names: a folder composed with slashes" finds 'auto p = dir + "/checkpoints/" + name;' \
  bash "$names" "$(repo_with slashes 'auto p = dir + "/checkpoints/" + name;\n')"
expect "run file names: a name with more after a dot" finds 'auto tmp = "config.json.tmp";' \
  bash "$names" "$(repo_with suffix 'auto tmp = "config.json.tmp";\n')"
expect "run file names: two names in one literal" finds '"checkpoints/step-"' \
  bash "$names" "$(repo_with two 'auto p = dir + "checkpoints/step-" + n;\n')"
expect "run file names: in a CUDA source" finds 'app/k.cu:1:' \
  bash "$names" "$(repo_with cuda 'const char* m = "metrics.jsonl";\n' k.cu)"

if ((fail)); then
  echo "a source check misses what it must find, or finds what is not there (tests/check_checks.sh)"
  exit 1
fi
echo "source checks: each finds what it must and passes a clean tree"
