#!/usr/bin/env bash
# A hostile pass over labs and sweeps (issue 46): every command's exit status and output are
# checked for a fault: a crash (signal), a hang (timeout), an unclear error (a library's words:
# stoll, type must be, basic_string, bad_alloc, more memory), an error of several lines, a file
# outside the grid written (a victim file's bytes or mode), shell text run (a PWNED marker).
# Usage: pass.sh HSM RESOURCES
set -u
HSM=$1
export HSM_RESOURCES=$2
W=$(mktemp -d /tmp/hgp.XXXXXX)
cd "$W"
tried=0; faults=0; i=0
LOG=$W/pass.log
victim() { printf 'mine\n' > "$W/victim"; chmod 600 "$W/victim"; }
victim
fault() { faults=$((faults+1)); echo "FAULT [$1]: $2" | tee -a "$LOG"; }
# try LABEL ALLOWED_CODES CMD...: runs CMD (timeout 120 s) and checks it.
try() {
  local label=$1 allowed=$2; shift 2
  tried=$((tried+1))
  local out rc
  out=$(timeout -s KILL 120 "$@" 2>&1); rc=$?
  echo "== [$label] rc=$rc :: $(echo "$out" | tail -2 | tr '\n' ' ' | cut -c1-240)" >> "$LOG"
  if [ $rc -eq 137 ]; then fault "$label" "hang or kill (rc 137)"; return; fi
  if [ $rc -gt 128 ] && [ $rc -ne 130 ]; then fault "$label" "crash rc $rc: $(echo "$out" | tail -1)"; return; fi
  case " $allowed " in *" $rc "*) ;; *) fault "$label" "exit $rc not in {$allowed}: $(echo "$out" | tail -1 | cut -c1-200)";; esac
  if echo "$out" | grep -qiE "stoll|stoi|type must be|basic_string|bad_alloc|needs more memory|terminate called|std::|\[json\.exception"; then
    fault "$label" "unclear error: $(echo "$out" | grep -iE 'stoll|stoi|type must|basic_string|bad_alloc|memory|terminate|std::|json\.exception' | head -1 | cut -c1-200)"
  fi
  if [ $rc -ne 0 ] && [ "$(echo "$out" | grep -c '^hsm: error:')" -ne 1 ] && echo "$out" | grep -q '^hsm: error:'; then
    fault "$label" "error of several 'hsm: error' lines"
  fi
  if [ "$(cat "$W/victim")" != "mine" ] || [ "$(stat -c %a "$W/victim")" != 600 ]; then fault "$label" "victim file changed"; victim; fi
  if [ -e "$W/PWNED" ]; then fault "$label" "shell text ran (PWNED)"; rm -f "$W/PWNED"; fi
  echo "tried $tried faults $faults" > "$W/count"
}
TASK="mqar:vocab=32,pairs=2,context=16"
cat > cfg.json <<J
{"name": "c", "vocab_size": 32, "d_model": 32, "context": 16, "dropout": 0, "layers": [{"mixer": "attn", "ffn": 64, "heads": 4}, {"mixer": "hsm_ab", "ffn": 64, "heads": 1}]}
J
spec() {  # spec FILE EXTRA_FIELDS [NAME_JSON] [AXES]
  printf '{"name": %s, "base": {"config": "cfg.json"}, "task": "%s", "train": {"steps": 3, "batch": 4, "eval_every": 3, "eval_batches": 1, "checkpoint_every": 3, "log_every": 1}, "axes": %s %s}\n' \
    "${3:-\"g\"}" "$TASK" "${4:-{\"seed\": [1, 2]\}}" "$2" > "$1"
}
# --- 2. Sweep folders: odd paths, other folders, links, damaged files ---------------------------
spec good.json ""
for out in "q'uote" "new
line" "sp ace" "per%cent" "-dash" "uni✓" "\$(touch $W/PWNED)"; do
  try "out [$out] --slurm" "0" "$HSM" sweep good.json --out "./$out" --slurm
  [ -f "./$out/sweep.sbatch" ] && { tried=$((tried+1)); bash -n "./$out/sweep.sbatch" || fault "out $out" "script does not parse"; }
  tried=$((tried+1))
  (cd / && env SLURM_ARRAY_JOB_ID=1 SLURM_ARRAY_TASK_ID=0 SLURM_CPUS_PER_TASK=1 bash "$W/$out/sweep.sbatch" >/dev/null 2>&1) || fault "out [$out]" "script run failed"
  grep -q '"done"' "$W/$out/points/seed=1.json" 2>/dev/null || fault "out [$out]" "script run trained nothing in the folder"
done
try "sweep run weird folder table" "0" "$HSM" sweep table "./q'uote"
touch afile
try "out = a file" "1" "$HSM" sweep good.json --out afile --slurm
"$HSM" lab --out labdir --task $TASK --model cfg.json --steps 2 --batch 4 --size as_is --test-examples 8 --table >/dev/null 2>&1
try "sweep into a lab" "1" "$HSM" sweep good.json --out labdir --slurm
"$HSM" sweep good.json --out SW0 --slurm >/dev/null 2>&1
try "lab into a sweep" "1" "$HSM" lab --out SW0 --task $TASK --model cfg.json --table
"$HSM" train --task $TASK --config cfg.json --out arun --steps 2 --batch 4 --threads 1 >/dev/null 2>&1
try "sweep into a run" "1" "$HSM" sweep good.json --out arun --slurm
try "lab into a run" "1" "$HSM" lab --out arun --task $TASK --model cfg.json --table
# links
mkdir -p elsewhere
"$HSM" sweep good.json --out L --slurm >/dev/null 2>&1
ln -sfn "$W/victim" L/sweep.sbatch
try "linked sweep.sbatch" "0" "$HSM" sweep good.json --out L --slurm
ln -sfn "$W/victim" "L/points/seed=1.log"
try "linked point log" "1" "$HSM" sweep good.json --out L
ln -sfn "$W/victim" "L/points/seed=2.json"
try "linked point state" "0 1" "$HSM" sweep good.json --out L
rm -rf L/runs; ln -sfn "$W/elsewhere" L/runs
try "linked runs/" "1" "$HSM" sweep good.json --out L
try "linked runs/ run" "1" "$HSM" sweep run L --point 0
[ -z "$(ls -A elsewhere)" ] || fault "linked runs/" "trained outside the folder"
"$HSM" sweep good.json --out R --slurm >/dev/null 2>&1
ln -sfn "$W/elsewhere" "R/runs/seed=1"
try "linked runs/POINT" "1" "$HSM" sweep run R --point 0
[ -z "$(ls -A elsewhere)" ] || fault "linked runs/POINT" "trained outside the folder"
# damaged manifests and states
for content in '' 'x' '{}' '{"spec": 5}' '{"spec": {"name": "g"}}' '[]' 'null'; do
  i=$((i+1)); "$HSM" sweep good.json --out D$i --slurm >/dev/null 2>&1; printf '%s' "$content" > D$i/sweep.json
  try "manifest [$content] table" "1" "$HSM" sweep table D$i
  try "manifest [$content] run" "1" "$HSM" sweep run D$i --point 0
done
for how in fifo zero dir; do
  i=$((i+1)); "$HSM" sweep good.json --out D$i --slurm >/dev/null 2>&1; rm D$i/sweep.json
  case $how in fifo) mkfifo D$i/sweep.json;; zero) ln -s /dev/zero D$i/sweep.json;; dir) mkdir D$i/sweep.json;; esac
  try "manifest $how table" "1" "$HSM" sweep table D$i
done
for st in '' 'x' '{"state": 5}' '{"state": "running", "pid": 0}' '{"state": "running", "pid": -1}' '{"state": "running", "pid": 1}' \
          '{"state": "running", "pid": "7"}' '{"state": "running", "pid": 99999999999}' '{"state": "running", "pid": '$$'}' '{"state": "weird"}' \
          '{"state": "done"}' '{"state": "failed", "error": 5}' '[]'; do
  i=$((i+1)); "$HSM" sweep good.json --out S$i --slurm >/dev/null 2>&1; printf '%s' "$st" > "S$i/points/seed=1.json"
  try "state [$st] table" "0" "$HSM" sweep table S$i
  try "state [$st] sweep" "0 1" "$HSM" sweep good.json --out S$i
done
for p in -1 2 99999999999 x ""; do
  try "--point [$p]" "1 105 106 109" "$HSM" sweep run D1 --point "$p"
done
# --- 3. Labs: options, folders, damaged files --------------------------------------------------
LAB() { "$HSM" lab --task $TASK --model cfg.json --steps 2 --batch 4 --size as_is --test-examples 8 "$@"; }
for lr in 0 -0.1 nan inf 1e-300 1e300 0.003x "0.003 --lr 0.003" "0.003 --lr 0.0030000001"; do
  i=$((i+1)); try "lab --lr $lr" "0 1 105 106 109" LAB --out lab_lr_$i --jobs 2 --lr $lr
done
try "lab task twice" "1" LAB --out lab_tt --task $TASK
try "lab model twice" "1" LAB --out lab_mm --model cfg.json
for s in 0 -1 101 x; do try "lab --seeds $s" "105 106 109 1" LAB --out lab_s --seeds $s; done
LAB --out base_lab --jobs 1 >/dev/null 2>&1
for content in '' '{}' '{"tasks": 5}' '{"tasks": ["'$TASK'"], "models": ["cfg.json"], "lrs": ["x"], "seeds": 1, "steps": 2, "batch": 4, "size": "as_is", "test_examples": 8}' 'null'; do
  i=$((i+1)); cp -r base_lab lab_d$i; printf '%s' "$content" > lab_d$i/lab.json
  try "lab.json [$content] --table" "1" "$HSM" lab --out lab_d$i --table
done
for how in fifo zero dir; do
  i=$((i+1)); cp -r base_lab lab_d$i; rm lab_d$i/lab.json
  case $how in fifo) mkfifo lab_d$i/lab.json;; zero) ln -s /dev/zero lab_d$i/lab.json;; dir) mkdir lab_d$i/lab.json;; esac
  try "lab.json $how" "1" "$HSM" lab --out lab_d$i --table
done
line=$(head -1 base_lab/results.jsonl)
for bad in '{"answer_accuracy": "x"}' '{"answer_accuracy": 1, "by_distance": {"far": [1,2]}}' '{"answer_accuracy": 1, "by_distance": {"1": "x"}}' \
           '{"answer_accuracy": 1, "lr": "x"}' '{"answer_accuracy": 1, "seed": 1.5}' '{"answer_accuracy": 1, "task": 5}' '[1]' 'garbage' '{"answer_accuracy": null}'; do
  i=$((i+1)); cp -r base_lab lab_r$i; printf '%s\n%s\n' "$line" "$bad" > lab_r$i/results.jsonl
  try "results [$bad] --table" "0" "$HSM" lab --out lab_r$i --table
  try "results [$bad] continue" "0" "$HSM" lab --out lab_r$i --jobs 1
done
for how in fifo zero dir; do
  i=$((i+1)); cp -r base_lab lab_r$i; rm lab_r$i/results.jsonl
  case $how in fifo) mkfifo lab_r$i/results.jsonl;; zero) ln -s /dev/zero lab_r$i/results.jsonl;; dir) mkdir lab_r$i/results.jsonl;; esac
  try "results.jsonl $how" "1" "$HSM" lab --out lab_r$i --table
done
cp -r base_lab lab_l1; rm -f lab_l1/table.csv; ln -s "$W/victim" lab_l1/table.csv
try "linked table.csv --table" "0" "$HSM" lab --out lab_l1 --table
try "linked table.csv run" "0" "$HSM" lab --out lab_l1 --jobs 1
cp -r base_lab lab_l2; rm lab_l2/results.jsonl; ln -s "$W/victim" lab_l2/results.jsonl
try "linked results.jsonl" "1" "$HSM" lab --out lab_l2 --jobs 1
LAB --out lab_l3 --table >/dev/null 2>&1; rm -rf lab_l3/runs; ln -s "$W/elsewhere" lab_l3/runs
try "linked lab runs/" "1" "$HSM" lab --out lab_l3 --jobs 1
[ -z "$(ls -A elsewhere)" ] || fault "linked lab runs/" "trained outside the folder"
try "lab --out ./base_lab" "0" "$HSM" lab --out ./base_lab --jobs 1
try "lab --out base_lab/" "0" "$HSM" lab --out base_lab/ --jobs 2
cp -r base_lab moved_lab
try "moved lab" "0" "$HSM" lab --out moved_lab --jobs 1
tried=$((tried+1)); [ "$(wc -l < moved_lab/results.jsonl)" -eq 1 ] || fault "moved lab" "re-scored: $(wc -l < moved_lab/results.jsonl) lines"
tried=$((tried+1)); [ "$(wc -l < base_lab/results.jsonl)" -eq 1 ] || fault "lab --out ./" "re-scored: $(wc -l < base_lab/results.jsonl) lines"
# --- 4. Snapshot: the base config edited, removed, retargeted mid-sweep ------------------------
spec snap.json ""
"$HSM" sweep snap.json --out snap --slurm >/dev/null 2>&1
cp cfg.json cfg.bak; sed -i 's/"d_model": 32/"d_model": 48/' cfg.json
try "snapshot: edited config, point 0" "0" "$HSM" sweep run snap --point 0
rm cfg.json
try "snapshot: removed config, point 1" "0" "$HSM" sweep run snap --point 1
try "snapshot: removed config, table" "0" "$HSM" sweep table snap --json
tried=$((tried+1)); grep -h '"d_model": 48' snap/runs/*/config.json && fault "snapshot" "a point trained the edited config"
cp cfg.bak cfg.json
# --- 5. Signals: to the group, the launcher alone, a worker alone -------------------------------
long_spec() { printf '{"name": "l", "base": {"config": "cfg.json"}, "task": "%s", "train": {"steps": 100000, "batch": 4, "eval_every": 100000, "eval_batches": 1, "checkpoint_every": 100000, "log_every": 1}, "axes": {"seed": [1, 2]}}\n' "$TASK" > long.json; }
long_spec
wait_training() { for k in $(seq 600); do [ "$(grep -l '"train"' "$1"/runs/*/metrics.jsonl 2>/dev/null | wc -l)" -ge 2 ] && return 0; sleep 0.1; done; return 1; }
check_ckpt() {  # every run under $1/runs has a checkpoint past step 0, at its last logged step
  for r in "$1"/runs/*/; do
    tried=$((tried+1))
    step=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['state']['step'])" "$r/config.json" 2>/dev/null || echo 0)
    last=$(grep '"train"' "$r/metrics.jsonl" | tail -1 | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['step'])" 2>/dev/null || echo 0)
    { [ "$step" -gt 0 ] && [ "$step" -ge "$last" ]; } || fault "$2" "run $(basename "$r"): checkpoint step $step, curve at $last"
  done
}
sig_case() {  # sig_case KIND(sweep|lab) SIGNAL TARGET(group|launcher|worker) EXPECTED_RC
  local kind=$1 sig=$2 target=$3 want=$4 d="sig_$1_$2_$3"
  rm -rf "$d"
  if [ "$kind" = sweep ]; then setsid "$HSM" sweep long.json --out "$d" --jobs 2 > "$d.log" 2>&1 &
  else "$HSM" lab --out "$d" --task $TASK --model cfg.json --model cfg2.json --steps 100000 --batch 4 --size as_is --test-examples 8 --table >/dev/null 2>&1
       setsid "$HSM" lab --out "$d" --jobs 2 > "$d.log" 2>&1 & fi
  local pid=$!
  tried=$((tried+1))
  wait_training "$d" || { fault "$d" "workers never trained"; kill -9 -$pid; wait $pid; return; }
  case $target in
    group) kill -$sig -- -$pid;;
    launcher) kill -$sig $pid;;
    worker) for w in $(pgrep -f -- "$W/$d --"; pgrep -f -- " $d --"); do [ "$w" != "$pid" ] && kill -$sig $w; done;;
  esac
  local k; for k in $(seq 1200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then fault "$d" "launcher still running 120 s after $sig"; kill -9 -- -$pid; fi
  wait $pid; local rc=$?
  [ "$rc" = "$want" ] || fault "$d" "exit $rc, want $want: $(tail -1 "$d.log")"
  grep -q "nan" "$d.log" && fault "$d" "prints nan"
  pgrep -f -- "$d --" >/dev/null && fault "$d" "a worker outlived the launcher"
  check_ckpt "$d" "$d"
}
sed 's/"attn"/"hsm_ab"/; s/"heads": 4/"heads": 1/' cfg.json > cfg2.json
sig_case sweep HUP group 130
sig_case sweep TERM launcher 130
sig_case sweep INT group 130
sig_case sweep TERM worker 1
sig_case sweep INT worker 1
sig_case lab HUP group 1
sig_case lab TERM launcher 1
sig_case lab INT group 1
sig_case lab TERM worker 1
sig_case lab HUP worker 1
# --- 1. Spec fields: name, resources, axes, points, base, task --------------------------------
i=0
for name in '"x\ntouch '$W'/PWNED\n#"' '"a b"' '"a'"'"'b"' '"$(touch '$W'/PWNED)"' '"`touch '$W'/PWNED`"' '"a;touch '$W'/PWNED"' '""' '"é"' '12' 'null' '["a"]' '"'$(printf 'a%.0s' $(seq 150))'"' '"ok-name_1.2"' '"a\"b"' '"a\\b"' '"%j"'; do
  i=$((i+1)); spec s_name_$i.json "" "$name"
  try "name $name --check" "0 1" "$HSM" sweep s_name_$i.json --check
  try "name $name --slurm" "0 1" "$HSM" sweep s_name_$i.json --out o_name_$i --slurm
  [ -f o_name_$i/sweep.sbatch ] && { tried=$((tried+1)); bash -n o_name_$i/sweep.sbatch 2>/dev/null || fault "name $name" "script does not parse";
    (cd / && SLURM_ARRAY_TASK_ID=999999 timeout 60 bash "$W/o_name_$i/sweep.sbatch" >/dev/null 2>&1); [ -e "$W/PWNED" ] && { fault "name $name" "the script ran shell text (PWNED)"; rm -f "$W/PWNED"; }; }
done
i=0
for res in '{"time": "x\ntouch '$W'/PWNED"}' '{"time": "10"}' '{"time": "1-00:00:00"}' '{"time": "UNLIMITED"}' '{"time": "1h"}' '{"time": ""}' '{"time": 5}' \
           '{"partition": "a;b"}' '{"partition": "gpu,cpu"}' '{"partition": "a b"}' '{"partition": ""}' '{"partition": "$(id)"}' \
           '{"cpus": "4"}' '{"cpus": 2.5}' '{"cpus": -1}' '{"cpus": 1e30}' '{"cpus": 99999999999}' '{"gpus": -1}' '{"gpus": true}' '{"mem_gb": 0}' '{"mem_gb": null}' \
           '[]' '"x"' '{"nodes": 2}'; do
  i=$((i+1)); spec s_res_$i.json ", \"resources\": $res"
  try "resources $res --check" "0 1" "$HSM" sweep s_res_$i.json --check
  try "resources $res --slurm" "0 1" "$HSM" sweep s_res_$i.json --out o_res_$i --slurm
  [ -f o_res_$i/sweep.sbatch ] && { tried=$((tried+1)); bash -n o_res_$i/sweep.sbatch 2>/dev/null || fault "res $res" "script does not parse";
    (cd / && SLURM_ARRAY_TASK_ID=999999 timeout 60 bash "$W/o_res_$i/sweep.sbatch" >/dev/null 2>&1); [ -e "$W/PWNED" ] && { fault "res $res" "the script ran shell text (PWNED)"; rm -f "$W/PWNED"; }; }
done
i=0
for axes in '{}' '{"seed": []}' '{"seed": null}' '{"seed": [null]}' '{"seed": ["1"]}' '{"seed": [-1]}' '{"seed": [1.5]}' '{"seed": [1e40]}' \
            '{"train.lr": [0.003, 0.0030000001]}' '{"train.lr": [0.003, 0.003]}' '{"train.lr": ["nan"]}' '{"train.lr": [-1]}' \
            '{"model.d_model": [32, "48"]}' '{"model.d_model": [0]}' '{"model.vocab_size": [300]}' '{"model.context": [8]}' \
            '{"model.layers.9.mixer": ["attn"]}' '{"model.layers.-1.mixer": ["attn"]}' '{"model.layers.0.mixer": ["nosuch"]}' \
            '{"model.placement": ["hsm_ab@99"]}' '{"model.placement": ["hsm_ab@x"]}' '{"model.placement": [{"mixer": "hsm_ab"}]}' \
            '{"train.nosuch": [1]}' '{"x": [1]}' '[1,2]' '"seed"'; do
  i=$((i+1)); spec s_axes_$i.json "" '"g"' "$axes"
  try "axes $axes --check" "0 1" "$HSM" sweep s_axes_$i.json --check
done
for pts in '[]' '[1]' '[{"seed": 1}, {"seed": 1}]' '[{"seed": "x"}]' '{"seed": 1}' 'null'; do
  i=$((i+1)); printf '{"name": "p", "base": {"config": "cfg.json"}, "task": "%s", "points": %s}\n' "$TASK" "$pts" > s_pts_$i.json
  try "points $pts" "0 1" "$HSM" sweep s_pts_$i.json --check
done
python3 -c "
import json; print(json.dumps({'name':'p','base':{'config':'cfg.json'},'task':'$TASK','points':[{'seed':k+1} for k in range(100001)]}))" > s_many.json
try "points 100001" "1" "$HSM" sweep s_many.json --check
python3 -c "
import json; print(json.dumps({'name':'p','base':{'config':'cfg.json'},'task':'$TASK','axes':{'seed':list(range(1,400)),'train.lr':[0.001*k for k in range(1,300)]}}))" > s_prod.json
try "axes product 119301" "1" "$HSM" sweep s_prod.json --check
mkfifo fifo.json; ln -sf /dev/zero zero.json; mkdir -p dir.json
for base in '{"config": "fifo.json"}' '{"config": "zero.json"}' '{"config": "dir.json"}' '{"config": "nosuch.json"}' '{"preset": "nosuch"}' '{"preset": 5}' '{}' '{"config": "cfg.json", "preset": "gpt"}' '"gpt"'; do
  i=$((i+1)); printf '{"name": "b", "base": %s, "task": "%s", "axes": {"seed": [1]}}\n' "$base" "$TASK" > s_base_$i.json
  try "base $base" "1" "$HSM" sweep s_base_$i.json --check
done
for task in '"nosuch"' '"mqar:vocab=300"' '5' '"mqar:vocab=32,pairs=2,context=16"' '"mqar:vocab=65536,pairs=16,context=32768"'; do
  i=$((i+1)); printf '{"name": "t", "base": {"config": "cfg.json"}, "task": %s, "axes": {"seed": [1]}}\n' "$task" > s_task_$i.json
  try "task $task" "0 1" "$HSM" sweep s_task_$i.json --check
done
for f in fifo.json zero.json dir.json /dev/null /proc/self/status; do
  try "spec file $f" "1 2 105" "$HSM" sweep "$f" --check
done
echo "tried $tried, faults $faults" | tee -a "$LOG"
echo "log: $LOG"
