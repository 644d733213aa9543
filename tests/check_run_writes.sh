#!/bin/bash
# A run folder is written through its owner (issue 66; docs/architecture.md, "The run folder"):
# the trainer and the diagnostics recorder (engine/src/train/) ask RunFolder to append a metric
# or a diagnosis, write the task or the tokenizer and clear a failed start; they open no record
# file (RecordLog), write no file whole (write_file_atomic, append_file_no_follow, an ofstream,
# a tokenizer's save) and remove none of the folder's files themselves. Fails naming each line.
# (The tensors stay theirs: save_weights/save_optimizer into the paths RunFolder gives.)
#   usage: check_run_writes.sh REPO_DIR
set -u
cd "${1:?usage: check_run_writes.sh REPO_DIR}" || exit 2
writes='\bRecordLog\b|write_file_atomic\(|append_file_no_follow\(|std::ofstream|(->|\.)save\(|fs::remove(_all)?\(paths\.'
found=$(grep -rnE "$writes" engine/src/train --include=*.cpp --include=*.h)
if [[ -n $found ]]; then
  echo "$found"
  echo "engine/src/train/ writes a run folder's file itself: ask hsm::RunFolder (append_metric, append_diagnosis, write_task, write_tokenizer, clear)"
  exit 1
fi
echo "run writes: the trainer and the recorder write the run folder through RunFolder"
