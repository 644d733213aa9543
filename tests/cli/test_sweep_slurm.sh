#!/usr/bin/env bash
# A sweep's Slurm array job on a real single-node Slurm (issue 39): munged, slurmctld and slurmd
# started here on localhost from a throw-away folder, `hsm sweep --slurm` written and submitted
# with sbatch --wait, and its run folders compared with the same sweep run by the local runner.
# Exits 77 (ctest: skipped) with the reason where Slurm cannot start (not installed, not root).
# Usage: test_sweep_slurm.sh HSM RESOURCES_DIR
set -u
HSM=$1
export HSM_RESOURCES=$2
export PATH=$PATH:/usr/sbin:/sbin
skip() { echo "SKIPPED: $*"; exit 77; }
for b in munged slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null || skip "$b is not installed (packaging/install-deps.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" -eq 0 ] || skip "slurmd runs jobs as their user only when started as root"

W=$(mktemp -d /tmp/hsm_slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; for f in "$W"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$W/munge" "$W/state" "$W/spool"
chmod 700 "$W/munge"
head -c 1024 /dev/urandom > "$W/munge/munge.key"
chmod 400 "$W/munge/munge.key"
munged --force --key-file="$W/munge/munge.key" --socket="$W/munge/socket" --pid-file="$W/munge/pid" \
  --log-file="$W/munged.log" --seed-file="$W/munge/seed" || skip "munged does not start: $(tail -1 "$W/munged.log" 2>/dev/null)"
pids+=("$(cat "$W/munge/pid")")

host=$(hostname -s)
cat > "$W/slurm.conf" <<EOF
ClusterName=hsmtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge/socket
CredType=cred/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2048 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$W/slurm.conf
slurmctld -f "$W/slurm.conf" || skip "slurmctld does not start: $(tail -1 "$W/slurmctld.log" 2>/dev/null)"
sleep 1
[ -f "$W/slurmctld.pid" ] && pids+=("$(cat "$W/slurmctld.pid")")
slurmd -f "$W/slurm.conf" || skip "slurmd does not start: $(tail -1 "$W/slurmd.log" 2>/dev/null)"
sleep 1
[ -f "$W/slurmd.pid" ] && pids+=("$(cat "$W/slurmd.pid")")
up=0
for _ in $(seq 1 30); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 1
done
[ $up -eq 1 ] || skip "the Slurm node does not come up: $(sinfo -h 2>&1 | tail -1); $(tail -1 "$W/slurmd.log" 2>/dev/null)"

# The sweep: 2 mixers x 2 seeds of a tiny model, a few steps, one CPU per point.
cd "$W" || exit 1
python3 - <<'EOF'
import random
random.seed(3)
names = ["Lily", "Tom", "Ben", "Mia"]; things = ["ball", "cat", "dog", "tree", "cake"]
with open("stories.txt", "w") as f:
    for s in range(250):
        n = random.choice(names)
        for k in range(4): f.write(f"Once upon a time, {n} saw a {random.choice(things)}. ")
        f.write("The end.\n<|endoftext|>\n")
open("tiny.json", "w").write('{"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32, "dropout": 0, "layers": '
    '[{"mixer": "attn", "ffn": 64, "heads": 4}, {"mixer": "attn", "ffn": 64, "heads": 4}]}')
open("spec.json", "w").write('{"name": "slurmtest", "base": {"config": "tiny.json"}, "data": "stories.txt", '
    '"train": {"steps": 30, "batch": 8, "eval_every": 10, "eval_batches": 2}, "resources": {"cpus": 1, "mem_gb": 1, '
    '"time": "00:10:00"}, "axes": {"model.layers.0.mixer": ["attn", "hsm_ab"], "seed": [1, 2]}}')
EOF
"$HSM" sweep spec.json --out "$W/slurm_sweep" --slurm || fail "hsm sweep --slurm"
grep -q -- '--array=0-3' "$W/slurm_sweep/sweep.sbatch" || fail "no 4-task array in sweep.sbatch"
timeout 300 sbatch --wait "$W/slurm_sweep/sweep.sbatch" > "$W/sbatch.log" 2>&1 || fail "sbatch --wait: $(cat "$W/sbatch.log")"
"$HSM" sweep spec.json --out "$W/local_sweep" --jobs "$(nproc)" > "$W/local.log" 2>&1 || fail "the local sweep"

"$HSM" sweep table "$W/slurm_sweep" --json > slurm.json || fail "table of the array job's sweep"
"$HSM" sweep table "$W/local_sweep" --json > local.json || fail "table of the local sweep"
python3 - <<'EOF' || fail "the array job's runs differ from the local runner's"
import json
s = json.load(open("slurm.json"))["rows"]; l = json.load(open("local.json"))["rows"]
assert len(s) == 4, s
assert [r["run"] for r in s] == [r["run"] for r in l], (s, l)
for a, b in zip(s, l):
    assert a["state"] == "done", a
    assert a["step"] == b["step"] == 30, (a, b)
    assert a["settings"] == b["settings"], (a, b)
    # One LibTorch thread each: the same run to the last bit.
    assert abs(a["final_val_loss"] - b["final_val_loss"]) <= 1e-9 * abs(b["final_val_loss"]), (a, b)
print("the array job's 4 runs equal the local runner's")
EOF
echo "PASSED"
