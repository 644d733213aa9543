#!/bin/bash
# The studio's layers point one way (docs/architecture.md, "The studio's layers"), as the engine's
# do (tests/check_layers.sh): reads every #include "gui/..." line of app/gui and fails, naming the
# file and the include, when a file includes one of a higher layer. Lowest first:
#   base     the plain pieces every layer uses: the engine's types as Qt types, the settings
#   widgets  widgets/: plots, tables, tinted text, the colour maps and the glossary; they know no run
#   engine   engine/ and the runs: engine access (executor, host, grid runner, run list)
#   state    views/*_state.*: what a view shows, without widgets of its own
#   views    views/: the views, their parts and the base class StudioView
#   help     help/: "What am I looking at?" and the tour, given the views' entries
#   windows  the view registry (the one file that names every view), the main window, the
#            smoke driver, the application
# A folder is one layer (views/*_state.* the state layer); a file directly in app/gui is placed by
# the table below (a new one must be placed, or the check fails saying so).
#   usage: check_studio_layers.sh GUI_DIR        (the repository's app/gui)
set -u
gui=${1:?usage: check_studio_layers.sh GUI_DIR}
cd "$gui" || exit 2

layers=(base widgets engine state views help windows)

declare -A top=(
  [engine_types.h]=base [studio_settings]=base [stall_monitor]=base
  [run_list]=engine [run_evaluation]=engine
  [view_registry]=windows [main_window]=windows [smoke_driver]=windows [studio_application]=windows
  [starter_run]=windows
)

declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done

fail=0
complain() {
  echo "$1"
  fail=1
}

# The layer of a path relative to app/gui ("views/lab_state.h"), or "?" when it has none.
layer_of() {
  local rel=$1
  case $rel in
    */*)
      local folder=${rel%%/*}
      if [[ $folder == views && ${rel##*/} == *_state.* ]]; then
        echo state
      elif [[ $folder == views || $folder == widgets || $folder == engine || $folder == help ]]; then
        echo "$folder"
      else
        echo "?"
      fi
      ;;
    *)
      local base=${rel%.*}
      if [[ -n ${top[$rel]:-} ]]; then
        echo "${top[$rel]}"
      elif [[ -n ${top[$base]:-} ]]; then
        echo "${top[$base]}"
      else
        echo "?"
      fi
      ;;
  esac
}

check_file() {
  local file=$1 layer=$2
  local n=0 line inc to
  while IFS= read -r line; do
    n=$((n + 1))
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"gui/([^\"]+)\" ]] || continue
    inc=${BASH_REMATCH[1]}
    to=$(layer_of "$inc")
    if [[ $to == "?" ]]; then
      complain "app/gui/$file:$n: #include \"gui/$inc\": gui/$inc is in no layer; place it in tests/check_studio_layers.sh"
      continue
    fi
    if ((rank[$to] > rank[$layer])); then
      complain "app/gui/$file:$n: #include \"gui/$inc\" points up: $layer (layer ${rank[$layer]}) includes $to (layer ${rank[$to]})"
    fi
  done <"$file"
}

while IFS= read -r -d '' file; do
  rel=${file#./}
  [[ $rel == pch.h ]] && continue  # the precompiled header: Qt and standard headers only
  layer=$(layer_of "$rel")
  if [[ $layer == "?" ]]; then
    complain "app/gui/$rel: is in no layer; place it in tests/check_studio_layers.sh"
    continue
  fi
  check_file "$rel" "$layer"
done < <(find . \( -name '*.h' -o -name '*.cpp' \) -print0 | sort -z)

# The main window knows the views only through the registry (issue 66): of views/ it includes the
# views' base class and entries and the two parts of the window itself (the start page, the
# presentation); a view's class is named in view_registry.cpp alone.
window_views=" views/studio_view.h views/view_entry.h views/start_page.h views/presentation_mode.h "
for file in main_window.h main_window.cpp; do
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"gui/(views/[^\"]+)\" ]] || continue
    inc=${BASH_REMATCH[1]}
    [[ $window_views == *" $inc "* ]] && continue
    complain "app/gui/$file:$n: #include \"gui/$inc\": the main window reaches a view through the registry (view_registry.h) and StudioView, not its class"
  done <"$file"
done

if ((fail)); then
  echo "Layers (lowest first): ${layers[*]} (docs/architecture.md, \"The studio's layers\")"
  exit 1
fi
echo "studio layers: no include points up (${layers[*]})"
