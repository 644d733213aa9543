#!/bin/bash
# A view's build() reads at once (issue 47), and so does its constructor (issue 66): build() and
# its named parts that make widgets (buildControls(), buildPlots(), ...: void or a widget or
# layout) in app/gui/views, and every constructor there and in the main window
# (app/gui/main_window.cpp), are at most MAX lines each, from the signature to the closing brace.
# Fails naming each longer one.
#   usage: check_view_build_length.sh REPO_DIR [MAX]
set -u
cd "${1:?usage: check_view_build_length.sh REPO_DIR [MAX]}" || exit 2
max=${2:-40}
found=$( (find app/gui/views -name '*.cpp'; echo app/gui/main_window.cpp) | sort | xargs awk -v max="$max" '
  FNR == 1 { start = 0 }
  /^(void|Q[A-Za-z]*\*) [A-Za-z:]*::build[A-Za-z]*\(.*\) (const )?\{$/ { start = FNR; name = $0; sub(/ *\{$/, "", name); next }
  # A constructor: Class::Class( at the start of a line (its initialisers may follow on more lines).
  /^[A-Z][A-Za-z0-9]*::[A-Z][A-Za-z0-9]*\(/ {
    split($0, part, "::")
    ctor = part[2]
    sub(/\(.*/, "", ctor)
    if (part[1] == ctor) { start = FNR; name = part[1] "::" ctor " (constructor)"; next }
  }
  start && /^}$/ {
    if (FNR - start + 1 > max) printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, start, name, FNR - start + 1, max
    start = 0
  }')
if [[ -n $found ]]; then
  echo "$found"
  echo "split it into named parts (buildControls(), buildPlots(), connectSignals(), ...) that each read at once"
  exit 1
fi
echo "every view build() method and every view and main window constructor: at most $max lines"
