#!/usr/bin/python3
"""Training, evaluation and decoding speed beside N busy-looping processes (issue 37).

For each N in --busy, N processes `while :; do :; done` are started, process i pinned to core
i mod cores (taskset), and the engine (not pinned) is measured with the default threads and
with every fixed count from 1 to the number of cores, alternating within each round:

  training and evaluation tok/s: `hsm bench MODEL --no-decode --steps S --json --threads T`
  decoding tok/s: `hsm generate RUN --max-tokens K --temperature 0 --no-stop --json --threads T`
                  (the bundled demo by default: the issue's measurement)

Prints one Markdown table: per N and measure, the median of the rounds for every setting, the
best fixed count and default / best. The load average is printed before each N; other
programs on the machine shift absolute figures, so read the ratios within a row.

  /usr/bin/python3 bench/contention.py --hsm build/engine/cli/hsm [--busy 0 1 2] [--rounds 3]

No PyTorch needed: it only runs the engine.
"""
import argparse
import json
import os
import statistics
import subprocess


def bench(hsm, model, steps, threads):
    cmd = [hsm, "bench", model, "--no-decode", "--steps", str(steps), "--json", "--threads", str(threads)]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    m = r["models"][0]
    return {"training": m["train_tokens_per_s"], "evaluation": m["eval_tokens_per_s"]}


def generate(hsm, run_dir, tokens, threads):
    cmd = [hsm, "generate", run_dir, "--prompt", "Once upon a time", "--max-tokens", str(tokens),
           "--temperature", "0", "--no-stop", "--json", "--threads", str(threads)]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"decoding": r["tokens_per_s"]}, r.get("decode_threads", 0)


def busy_loops(n, cores):
    return [subprocess.Popen(["taskset", "-c", str(i % cores), "sh", "-c", "while :; do :; done"]) for i in range(n)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    cores = os.cpu_count() or 1
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hsm", required=True, help="path to the hsm executable")
    ap.add_argument("--busy", nargs="+", type=int, default=[0, 1, 2], help="busy-looping processes (default 0 1 2)")
    ap.add_argument("--model", default="hsm_ab", help="preset or config for training and evaluation")
    ap.add_argument("--run", default=os.path.join(here, "..", "resources", "models", "hsm_ab"),
                    help="model folder for decoding (default: the bundled hsm_ab)")
    ap.add_argument("--steps", type=int, default=2, help="timed training steps per measurement")
    ap.add_argument("--tokens", type=int, default=120, help="tokens decoded per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--measures", nargs="+", default=["training", "evaluation", "decoding"])
    a = ap.parse_args()
    settings = [0] + list(range(1, cores + 1))  # 0: the default
    name = {0: "default"}
    measures = a.measures
    print(f"{cores} cores; model {a.model} (training, evaluation), {a.run} (decoding, {a.tokens} tokens); "
          f"{a.rounds} rounds, settings alternating", flush=True)
    rows = []
    for n in a.busy:
        loops = busy_loops(n, cores)
        try:
            load_before = os.getloadavg()[0]
            got = {(m, t): [] for m in measures for t in settings}
            chosen = []
            for r in range(a.rounds):
                for t in settings:
                    if "training" in measures or "evaluation" in measures:
                        for m, v in bench(a.hsm, a.model, a.steps, t).items():
                            if m in measures:
                                got[(m, t)].append(v)
                    if "decoding" in measures:
                        v, used = generate(a.hsm, a.run, a.tokens, t)
                        got[("decoding", t)].append(v["decoding"])
                        if t == 0:
                            chosen.append(used)
                print(f"  busy {n}, round {r + 1}: " + "; ".join(
                    f"{m} " + " ".join(f"{name.get(t, t)}={got[(m, t)][-1]:.0f}" for t in settings)
                    for m in measures), flush=True)
            load_after = os.getloadavg()[0]
        finally:
            for p in loops:
                p.kill()
                p.wait()
        for m in measures:
            med = {t: statistics.median(got[(m, t)]) for t in settings}
            best = max(settings[1:], key=lambda t: med[t])
            note = f" (default chose {sorted(set(chosen))} thread(s))" if m == "decoding" and chosen else ""
            rows.append((n, m, med, best, f"{load_before:.1f} → {load_after:.1f}", note))
    print()
    print("| busy | measure | default | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in settings[1:]) +
          " | best fixed | default / best | load |")
    print("|---|---|" + "---|" * (len(settings) + 3))
    for n, m, med, best, load, note in rows:
        cells = " | ".join(f"{med[t]:.0f}" for t in settings[1:])
        print(f"| {n} | {m}{note} | {med[0]:.0f} | {cells} | {best} | **{med[0] / med[best]:.2f}** | {load} |")


if __name__ == "__main__":
    main()
