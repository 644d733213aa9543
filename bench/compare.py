#!/usr/bin/python3
"""Engine against plain PyTorch, back to back (issue 9).

For each model, alternately: the Python reference (reference_model.py) in this process,
then `hsm bench MODEL --json` in a child process, several rounds; prints the medians and
the engine/Python ratios of training tokens/s (batch × context, forward + loss + backward
+ AdamW) and evaluation tokens/s (forward + loss without gradients, batch 64).

  /usr/bin/python3 bench/compare.py --hsm build-speed/engine/cli/hsm [--models gpt hsm_ab hybrid_0_6]
      [--batch 32] [--context 128] [--steps 6] [--rounds 3]

Both sides use their defaults for threads (PyTorch: one per core; the engine: its own
choice, printed); pass --torch-threads / --engine-args to change that.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_model import Gpt, load_preset  # noqa: E402


def python_speed(name, batch, context, steps, eval_batch):
    config = load_preset(name, context)
    torch.manual_seed(0)
    model = Gpt(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, config["vocab_size"], (batch, context + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    model.train()
    for s in range(steps + 1):
        if s == 1:
            t0 = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    train = steps * batch * context / (time.perf_counter() - t0)
    model.eval()
    tokens = torch.randint(0, config["vocab_size"], (eval_batch, context + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    with torch.no_grad():
        model(x, y)
        t0 = time.perf_counter()
        for _ in range(2):
            model(x, y).item()
        evaluate = 2 * eval_batch * context / (time.perf_counter() - t0)
    return train, evaluate


def engine_speed(hsm, name, batch, context, steps, extra):
    cmd = [hsm, "bench", name, "--batch", str(batch), "--context", str(context), "--steps", str(steps),
           "--tokens", "1", "--json"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    m = r["models"][0]
    return m["train_tokens_per_s"], m["eval_tokens_per_s"], r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hsm", required=True, help="path to the hsm executable")
    ap.add_argument("--models", nargs="+", default=["gpt", "hsm_ab", "hybrid_0_6"])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-threads", type=int, default=0)
    ap.add_argument("--engine-args", default="", help="extra arguments for hsm bench, e.g. '--threads 1'")
    a = ap.parse_args()
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; load {os.getloadavg()[0]:.2f}",
          flush=True)
    rows = []
    for name in a.models:
        py_t, py_e, en_t, en_e = [], [], [], []
        for _ in range(a.rounds):
            t, e = python_speed(name, a.batch, a.context, a.steps, 64)
            py_t.append(t)
            py_e.append(e)
            t, e, info = engine_speed(a.hsm, name, a.batch, a.context, a.steps, a.engine_args.split())
            en_t.append(t)
            en_e.append(e)
        med = statistics.median
        rows.append((name, med(py_t), med(en_t), med(py_e), med(en_e)))
        print(f"  {name}: python train {[round(v) for v in py_t]} engine {[round(v) for v in en_t]}; "
              f"python eval {[round(v) for v in py_e]} engine {[round(v) for v in en_e]} "
              f"(engine: {info.get('threads_note', '')})", flush=True)
    print(f"\nbatch {a.batch} x {a.context}, {a.steps} timed steps, median of {a.rounds} alternating rounds; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'model':<12} {'train py':>9} {'train hsm':>10} {'ratio':>6} {'eval py':>9} {'eval hsm':>9} {'ratio':>6}")
    for name, pt, et, pe, ee in rows:
        print(f"{name:<12} {pt:9.0f} {et:10.0f} {et / pt:5.2f}x {pe:9.0f} {ee:9.0f} {ee / pe:5.2f}x")


if __name__ == "__main__":
    main()
