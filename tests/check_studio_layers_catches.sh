#!/bin/bash
# tests/check_studio_layers.sh fails by name on an upward include: a copy of app/gui where a
# widget includes the main window (the top layer) must fail, naming that file, its line and the
# include; the copy as it is must pass.
#   usage: check_studio_layers_catches.sh REPO_DIR
set -u
repo=${1:?usage: check_studio_layers_catches.sh REPO_DIR}
check="$repo/tests/check_studio_layers.sh"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$repo/app/gui" "$copy/gui"
if ! bash "$check" "$copy/gui" >/dev/null; then
  echo "the unchanged copy of app/gui fails the check"
  exit 1
fi
echo '#include "gui/main_window.h"' >>"$copy/gui/widgets/plot_panel.h"
line=$(wc -l <"$copy/gui/widgets/plot_panel.h")
out=$(bash "$check" "$copy/gui")
rc=$?
expected="app/gui/widgets/plot_panel.h:$line: #include \"gui/main_window.h\" points up: widgets (layer 1) includes windows (layer 6)"
if ((rc == 0)) || ! grep -qF "$expected" <<<"$out"; then
  echo "an upward include was not named (exit $rc); expected: $expected"
  echo "got: $out"
  exit 1
fi
echo "an upward include fails the check by name: $expected"
