#!/bin/bash
# A view's build() reads at once (issue 47): build() and its named parts that make widgets
# (buildControls(), buildPlots(), ...: void or a widget or layout) in app/gui/views are at most
# MAX lines each, from the signature to the closing brace. Fails naming each longer one.
#   usage: check_view_build_length.sh REPO_DIR [MAX]
set -u
cd "${1:?usage: check_view_build_length.sh REPO_DIR [MAX]}" || exit 2
max=${2:-40}
found=$(find app/gui/views -name '*.cpp' | sort | xargs awk -v max="$max" '
  FNR == 1 { start = 0 }
  /^(void|Q[A-Za-z]*\*) [A-Za-z:]*::build[A-Za-z]*\(.*\) (const )?\{$/ { start = FNR; name = $0; sub(/ *\{$/, "", name); next }
  start && /^}$/ {
    if (FNR - start + 1 > max) printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, start, name, FNR - start + 1, max
    start = 0
  }')
if [[ -n $found ]]; then
  echo "$found"
  echo "split it into named parts (buildControls(), buildPlots(), ...) that each read at once"
  exit 1
fi
echo "every view build() method: at most $max lines"
