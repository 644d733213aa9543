#!/usr/bin/python3
"""Runs the numpy forward pass of docs/checkpoint-format.md against the engine.

For each run folder: the doc's own Python blocks (load_safetensors, the helpers, `mixer`,
`da_mixer`, `block`, `qk_streams`, `forward`) recompute, in float64, the probabilities that
`hsm generate --json` reports for the top-5 tokens of each of 50 sampled steps (cached
decoding, LibTorch path; the prompt and the samples stay inside the context, so no window
slides). Prints the largest difference per run. A development tool: needs numpy and
sentencepiece (Debian: python3-numpy, python3-sentencepiece), not a dependency of the product.

  /usr/bin/python3 bench/check_numpy_forward.py --hsm build/engine/cli/hsm RUN [RUN ...]
"""
import argparse
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import sentencepiece as spm

ROOT = Path(__file__).resolve().parents[1]


def doc_namespace():
    doc = (ROOT / "docs" / "checkpoint-format.md").read_text()
    ns = {}
    for block in re.findall(r"```python\n(.*?)```", doc, re.S):
        if "def load_safetensors" in block:
            exec(block.split("W, meta =")[0], ns)  # the loader, without its example call
        elif any(f"def {name}" in block for name in ("gelu", "heads", "silu")):
            exec(block, ns)
    return ns


def check(ns, hsm, run, prompt, steps):
    W, meta = ns["load_safetensors"](str(Path(run) / "model.safetensors"))
    W = {k: v if v.dtype == np.int64 else v.astype(np.float64) for k, v in W.items()}
    cfg = json.loads(meta["config"])
    sp = spm.SentencePieceProcessor(model_file=str(Path(run) / "tokenizer.model"))
    ids = [sp.piece_to_id("<|endoftext|>")] + sp.encode(prompt)  # the session starts a prompt with it
    steps = min(steps, cfg["context"] - len(ids))
    out = subprocess.run([hsm, "generate", run, "--prompt", prompt, "--max-tokens", str(steps), "--temperature", "1",
                          "--top-p", "1", "--top-k", "0", "--seed", "5", "--no-stop", "--no-fast-path", "--json"],
                         capture_output=True, text=True, check=True).stdout
    worst = 0.0
    for token in json.loads(out[out.index("{"):])["tokens"]:
        logits = ns["forward"](W, cfg, np.array(ids))[-1]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        worst = max([worst] + [abs(p[alt["id"]] - alt["prob"]) for alt in token["top"]])
        ids.append(token["id"])
    mixers = ",".join(sorted({layer["mixer"] for layer in cfg["layers"]}))
    return worst, mixers


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--hsm", default=str(ROOT / "build" / "engine" / "cli" / "hsm"))
    p.add_argument("--prompt", default="Once upon a time there was a little")
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    ns = doc_namespace()
    overall = 0.0
    for run in args.runs:
        worst, mixers = check(ns, args.hsm, run, args.prompt, args.steps)
        overall = max(overall, worst)
        print(f"{Path(run).name:24s} {mixers:24s} max |p_numpy - p_engine| = {worst:.1e}")
    print(f"all: {overall:.1e}")


if __name__ == "__main__":
    main()
