#!/usr/bin/python3
"""`hsm generate` tokens/s on the bundled demo models, every decoding path back to back (issue 9).

For each model and round, in this order: the fast path (hand-written fp32, the default), LibTorch's
cached steps (--no-fast-path) and no cache at all (--no-cache: the window recomputed for every
token); greedy, a fixed prompt, --no-stop so every run makes exactly --tokens tokens. Prints the
medians and the ratios fast/uncached, fast/libtorch, libtorch/uncached.

  /usr/bin/python3 bench/generate_speed.py --hsm build/engine/cli/hsm [--models hsm_ab gpt hybrid_0_6]
      [--tokens 128] [--rounds 3]

No PyTorch needed: it only runs the engine.
"""
import argparse
import json
import os
import statistics
import subprocess

MODES = [("fast", []), ("libtorch", ["--no-fast-path"]), ("uncached", ["--no-cache"])]


def run(hsm, model_dir, tokens, prompt, extra):
    cmd = [hsm, "generate", model_dir, "--prompt", prompt, "--max-tokens", str(tokens), "--temperature", "0",
           "--no-stop", "--json"] + extra
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return r["tokens_per_s"], r.get("decoder", "?"), len(r["tokens"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hsm", required=True, help="path to the hsm executable")
    ap.add_argument("--models", nargs="+", default=["hsm_ab", "gpt", "hybrid_0_6"])
    ap.add_argument("--models-dir", default=os.path.join(here, "..", "resources", "models"))
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", default="Once upon a time")
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}; {a.tokens} tokens, greedy, prompt {a.prompt!r}", flush=True)
    rows = []
    for name in a.models:
        speeds = {m: [] for m, _ in MODES}
        for _ in range(a.rounds):
            for mode, extra in MODES:
                tps, decoder, n = run(a.hsm, os.path.join(a.models_dir, name), a.tokens, a.prompt, extra)
                assert n == a.tokens, (name, mode, n)
                speeds[mode].append(tps)
        print(f"  {name}: " + "; ".join(f"{m} {[round(v) for v in speeds[m]]}" for m, _ in MODES), flush=True)
        rows.append((name, {m: statistics.median(v) for m, v in speeds.items()}))
    print(f"\nmedian of {a.rounds} alternating rounds; load {os.getloadavg()[0]:.2f}")
    print(f"{'model':<12} {'fast':>7} {'libtorch':>9} {'uncached':>9} {'fast/unc':>9} {'fast/lt':>8} {'lt/unc':>7}")
    for name, m in rows:
        print(f"{name:<12} {m['fast']:7.0f} {m['libtorch']:9.0f} {m['uncached']:9.0f} "
              f"{m['fast'] / m['uncached']:8.1f}x {m['fast'] / m['libtorch']:7.2f}x {m['libtorch'] / m['uncached']:6.1f}x")


if __name__ == "__main__":
    main()
