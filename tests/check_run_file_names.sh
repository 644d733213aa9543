#!/bin/bash
# A run folder's file names are spelled once (issue 47): in engine/src/run/run_folder_files.cpp,
# behind RunFolder (hsm/run_folder.h). Fails naming each other place in the engine, the CLI or
# the studio that builds a path from one of them: a string literal that is the name, alone or as
# a path's parts ("/checkpoints/", "checkpoints/step-"), or the name with more after a dot
# ("config.json.tmp", "model.safetensors.part"). C++ and CUDA sources (.cpp .h .cu .cuh).
#   usage: check_run_file_names.sh REPO_DIR
set -u
cd "${1:?usage: check_run_file_names.sh REPO_DIR}" || exit 2
names='config\.json|model\.safetensors|optimizer\.safetensors|metrics\.jsonl|diagnostics\.jsonl|traces\.jsonl|tokenizer\.model|best\.safetensors|task\.json|checkpoints|\.lock|step-|damaged-'
owner=engine/src/run/run_folder_files.cpp
found=$(grep -rnE "\"(/?($names)(\.[A-Za-z0-9_]+)*)+/?\"" engine/src engine/cli engine/include app \
          --include=*.cpp --include=*.h --include=*.cu --include=*.cuh --include=*.hpp --include=*.cc |
        grep -v "^$owner:")
if [[ -n $found ]]; then
  echo "$found"
  echo "a run folder's file name spelled outside $owner: take the path from hsm::RunFolder (hsm/run_folder.h)"
  exit 1
fi
echo "run folder file names: spelled in $owner only"
