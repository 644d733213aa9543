#!/bin/bash
# The engine's layers point one way (docs/architecture.md, "Layers"): reads every #include
# "..." and #include <hsm/...> line of engine/src (C++ and CUDA sources: .h, .cpp, .cu, .cuh) and
# engine/include/hsm and fails, naming the file and the include, when a file includes one of a
# higher layer. A folder of engine/src is one layer; a public
# header (hsm/X.h) belongs to the layer that implements it (the table below: a new header
# must be placed, or the check fails saying so).
#   usage: check_layers.sh ENGINE_DIR        (the repository's engine/)
set -u
engine=${1:?usage: check_layers.sh ENGINE_DIR}
cd "$engine" || exit 2

# Lowest first: a layer includes its own and the ones before it, never one after it.
layers=(kernels io arch data tasks run diagnostics model eval train inference perf sweep)

declare -A public=(
  [cpu_threads.h]=kernels
  [errors.h]=io [files.h]=io [jsonl_tail.h]=io [progress.h]=io [safetensors.h]=io [version.h]=io [svg_plot.h]=io
  [worker_process.h]=io
  [config.h]=arch [cost.h]=arch [mixer_kind.h]=arch [params.h]=arch [presets.h]=arch
  [receptive_field.h]=arch [settings.h]=arch [train_settings.h]=arch
  [corpus.h]=data [dataset.h]=data [tokenizer.h]=data
  [tasks.h]=tasks
  [diagnostics.h]=diagnostics [diagnostics_log.h]=diagnostics [knock_out.h]=arch
  [what_if.h]=arch [probe.h]=diagnostics [routes.h]=diagnostics [formation.h]=diagnostics [trace_maps.h]=diagnostics
  [run_folder.h]=run [export.h]=run
  [distributed.h]=train [trainer.h]=train [train_until_stopped.h]=train
  [model.h]=inference [generator.h]=inference [evaluator.h]=inference [prober.h]=inference
  [sampling.h]=inference [system_info.h]=inference [token_scores.h]=inference [task_run.h]=inference [trace.h]=inference
  [bench.h]=perf
  [sweep.h]=sweep [lab.h]=sweep [grid_workers.h]=sweep [lab_stats.h]=sweep [lab_report.h]=sweep
)

# Files that are in a folder below their layer until they move (each with the reason).
declare -A allowed=(
)

declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done

fail=0
complain() {
  echo "$1"
  fail=1
}

# The layer of an included path, or "" for a path of the file's own folder (no slash).
layer_of_include() {
  local inc=$1
  case $inc in
    hsm/*)
      local h=${inc#hsm/}
      if [[ -z ${public[$h]:-} ]]; then
        echo "?"
      else
        echo "${public[$h]}"
      fi
      ;;
    */*) echo "${inc%%/*}" ;;
    *) echo "" ;;
  esac
}

check_file() {
  local file=$1 layer=$2
  local n=0 line inc to
  while IFS= read -r line; do
    n=$((n + 1))
    if [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      inc=${BASH_REMATCH[1]}
    elif [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<(hsm/[^\>]+)\> ]]; then
      inc=${BASH_REMATCH[1]}  # the public headers by the system include path
    else
      continue
    fi
    to=$(layer_of_include "$inc")
    [[ -z $to ]] && continue
    if [[ $to == "?" ]]; then
      complain "$file:$n: #include \"$inc\": hsm/${inc#hsm/} is in no layer; add it to the table in tests/check_layers.sh"
      continue
    fi
    if [[ -z ${rank[$to]:-} ]]; then
      complain "$file:$n: #include \"$inc\": '$to' is no layer; add the folder to the layers in tests/check_layers.sh"
      continue
    fi
    if ((rank[$to] > rank[$layer])); then
      complain "$file:$n: #include \"$inc\" points up: $layer/ (layer ${rank[$layer]}) includes $to/ (layer ${rank[$to]})"
    fi
  done <"$file"
}

while IFS= read -r -d '' file; do
  rel=${file#./}
  layer=${rel#src/}
  layer=${layer%%/*}
  [[ $rel == src/pch.h ]] && continue  # the precompiled header: standard and LibTorch headers only
  if [[ -n ${allowed[$rel]:-} ]]; then
    layer=${allowed[$rel]}
  elif [[ -z ${rank[$layer]:-} ]]; then
    complain "$rel: the folder src/$layer is no layer; add it to the layers in tests/check_layers.sh"
    continue
  fi
  check_file "$rel" "$layer"
done < <(find ./src \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.cc' \) -print0 |
         sort -z)

while IFS= read -r -d '' file; do
  rel=${file#./}
  h=${rel#include/hsm/}
  if [[ -z ${public[$h]:-} ]]; then
    complain "$rel: hsm/$h is in no layer; add it to the table in tests/check_layers.sh"
    continue
  fi
  check_file "$rel" "${public[$h]}"
done < <(find ./include/hsm -name '*.h' -print0 | sort -z)

if ((fail)); then
  echo "Layers (lowest first): ${layers[*]} (docs/architecture.md, \"Layers\")"
  exit 1
fi
echo "engine layers: no include points up (${layers[*]})"
