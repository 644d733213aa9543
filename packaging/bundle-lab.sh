#!/bin/sh
# Copies a finished lab folder (`hsm lab --out SRC`) to DEST as a bundled lab (resources/labs/,
# issue 68): the folder as `hsm lab --out` wrote it, less what its table, its report and the Lab
# view do not read — every run's weights (model.safetensors), checkpoints (weights and optimizer
# state at each step kept) and lock. Kept: sweep.json (the grid and its models' configs),
# table.csv, points/NAME.json and .log (each run's score and how it ended), and per run
# config.json, task.json, metrics.jsonl (the curves; the "not converged" mark) and traces.jsonl
# (the report's "mechanism" column). BUNDLED.json says what made it.
#
#   packaging/bundle-lab.sh SRC DEST 'COMMAND' 'MACHINE' [DATE]
# DATE defaults to SRC's table.csv's modification date (UTC). DEST must not exist.
set -eu
if [ $# -lt 4 ]; then
  echo "usage: $0 SRC DEST 'COMMAND' 'MACHINE' [DATE]" >&2
  exit 2
fi
src=$1 dest=$2 command=$3 machine=$4
[ -f "$src/sweep.json" ] && [ -f "$src/table.csv" ] || { echo "$0: '$src' holds no finished lab (sweep.json, table.csv)" >&2; exit 1; }
[ ! -e "$dest" ] || { echo "$0: '$dest' exists; give a new folder" >&2; exit 1; }
date=${5:-$(date -u -r "$src/table.csv" +%Y-%m-%d)}

mkdir -p "$dest/points" "$dest/runs"
cp "$src/sweep.json" "$src/table.csv" "$dest/"
for f in "$src"/points/*.json "$src"/points/*.log; do
  [ -f "$f" ] && cp "$f" "$dest/points/"
done
for run in "$src"/runs/*/; do
  name=$(basename "$run")
  mkdir -p "$dest/runs/$name"
  for f in config.json task.json metrics.jsonl traces.jsonl; do
    [ -f "$run/$f" ] && cp "$run/$f" "$dest/runs/$name/"
  done
done
python3 - "$dest/BUNDLED.json" "$command" "$machine" "$date" <<'EOF'
import json, sys
path, command, machine, date = sys.argv[1:5]
with open(path, "w") as f:
    json.dump({"command": command, "machine": machine, "date": date}, f, indent=2)
    f.write("\n")
EOF
du -sh "$dest"
