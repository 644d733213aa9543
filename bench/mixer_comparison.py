#!/usr/bin/env python3
"""Trains the other papers' mixers at one equal token budget and tabulates their losses.

Two comparisons, each a set of reduced-size models that differ only in their token mixer:
  ex  the Extractors paper's (EX §6, Figure 8) on the Gutenberg children's books:
      SHE, HE, WE, ME against 1-head and 32-head attention;
  da  Deconstructing Attention's (DA Table 1) on the TinyStories sample: every variant in
      uniform form (all layers) and hybrid form (0-based layers 0, 2, ... replaced), standard
      attention, and each hybrid evaluated with its replaced layers skipped.

Every model of a comparison sees the same batches in the same order (same seed, corpus,
tokenizer, windows), the same schedule and the same number of tokens. Runs go two at a
time, one LibTorch thread each, at low priority; a finished run is not trained again, so
the script can be stopped and started. Standard library only; it drives `hsm`.

  bench/mixer_comparison.py --hsm build/engine/cli/hsm --work /tmp/mixcmp ex da
  bench/mixer_comparison.py --work /tmp/mixcmp --table ex da     # tables of what finished
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"

# Reduced sizes: small enough that every model of both comparisons trains in about two
# hours of this 2-core CPU in all, large enough that the mixers matter (4 layers, so the
# hybrids keep two attention layers).
COMMON = dict(vocab_size=2000, d_model=64, context=64, dropout=0.1)
LAYERS = 4
FFN = 256

# DA's variants and their heads (the gated MLP mixes no tokens and has no heads).
DA_HEADS = dict(mlp=1, taylor=4, nonapprox=4, rnd_emb_qk=4, fixed_seq_qk=4, static_emb_qk=4)

COMPARISONS = {
    "ex": dict(
        data=SHARED / "gutenberg-children",
        # EX Table 1: AdamW lr 0.001, weights N(0, 0.01), biases 0 (init "ex").
        train=dict(lr=0.001, warmup=50, batch=32),
        init="ex",
        models={
            "she": [("she", 1)] * LAYERS,
            "he": [("he", 1)] * LAYERS,
            "we": [("we", 1)] * LAYERS,
            "me": [("me", 1)] * LAYERS,
            "attn1": [("attn", 1)] * LAYERS,
            "attn32": [("attn", 32)] * LAYERS,
        },
    ),
    "da": dict(
        data=SHARED / "tinystories" / "tinystories-sample.txt",
        train=dict(lr=0.002, warmup=50, batch=32),
        init=None,
        models=dict(
            [("attn", [("attn", 4)] * LAYERS)]
            + [(m, [(m, DA_HEADS[m])] * LAYERS) for m in DA_HEADS]
            + [("hybrid_" + m, [((m, h) if l % 2 == 0 else ("attn", 4)) for l in range(LAYERS)]) for m, h in DA_HEADS.items()]
        ),
    ),
}


def config_json(name, layers, init):
    c = dict(name=name, description="mixer comparison, reduced size", **COMMON)
    if init:
        c["init"] = init
    c["layers"] = [dict(mixer=m, ffn=FFN, heads=h) for m, h in layers]
    return c


def run(cmd, log=None):
    with open(log, "a") if log else open(os.devnull, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False).returncode


def hsm_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(" ".join(map(str, cmd)) + ":\n" + out.stderr[-2000:])
    text = out.stdout
    return json.loads(text[text.index("{"):])  # `hsm ... --json` prints one (indented) object last


def prepare(args, key):
    spec = COMPARISONS[key]
    work = Path(args.work) / key
    work.mkdir(parents=True, exist_ok=True)
    tok = work / "tokenizer.model"
    if not tok.exists():
        run([args.hsm, "tokenizer", "train", "--data", str(spec["data"]), "--vocab", str(COMMON["vocab_size"]),
             "--out", str(tok)], work / "tokenizer.log")
    jobs = []
    for name, layers in spec["models"].items():
        cfg = work / f"{name}.json"
        cfg.write_text(json.dumps(config_json(name, layers, spec["init"]), indent=2))
        jobs.append((key, name, cfg))
    return jobs


def train(args, key, name, cfg):
    spec = COMPARISONS[key]
    out = Path(args.work) / key / "runs" / name
    if (out / "done.json").exists():
        return
    t = spec["train"]
    cmd = ["nice", "-n", str(args.nice), args.hsm, "train", "--config", str(cfg), "--data", str(spec["data"]),
           "--tokenizer", str(Path(args.work) / key / "tokenizer.model"), "--out", str(out),
           "--steps", str(args.steps), "--batch", str(t["batch"]), "--lr", str(t["lr"]), "--warmup", str(t["warmup"]),
           "--cosine", "--min-lr", str(t["lr"] / 10), "--eval-every", str(max(1, args.steps // 8)),
           "--eval-batches", "20", "--checkpoint-every", str(max(1, args.steps // 4)), "--threads", "1",
           "--seed", "7", "--windows", "packed", "--json"]
    if out.exists():
        cmd = ["nice", "-n", str(args.nice), args.hsm, "train", "--resume", "--out", str(out), "--steps",
               str(args.steps), "--threads", "1", "--json"]
    start = time.time()
    rc = run(cmd, Path(args.work) / key / f"{name}.log")
    if rc != 0:
        print(f"{key}/{name}: hsm train failed (exit {rc}); see {Path(args.work) / key / (name + '.log')}", flush=True)
        return
    (out / "done.json").write_text(json.dumps(dict(seconds=time.time() - start, steps=args.steps)))
    print(f"{key}/{name}: trained in {time.time() - start:.0f} s", flush=True)


def evaluate(args, key, name):
    spec = COMPARISONS[key]
    run_dir = Path(args.work) / key / "runs" / name
    result_file = run_dir / "eval.json"
    if result_file.exists():
        return json.loads(result_file.read_text())
    if not (run_dir / "done.json").exists():
        return None
    base = [args.hsm, "eval", str(run_dir), "--data", str(spec["data"]), "--threads", "2", "--json"]
    r = dict(full=hsm_json(base))
    if name.startswith("hybrid_"):
        replaced = [str(l) for l, (m, _) in enumerate(spec["models"][name]) if m != "attn"]
        r["skip"] = hsm_json(base + ["--skip-layers", ",".join(replaced)])
    params = hsm_json([args.hsm, "inspect", str(Path(args.work) / key / f"{name}.json"), "--json"])
    r["params"] = params["params"]["total"]
    metrics = [json.loads(l) for l in (run_dir / "metrics.jsonl").read_text().splitlines() if l.strip()]
    train_losses = [m["train_loss"] for m in metrics if m.get("kind") == "train" and "train_loss" in m]
    tail = train_losses[-max(1, len(train_losses) // 10):]
    r["train_loss_tail"] = sorted(tail)[len(tail) // 2]  # median of the last 10% (EX Fig. 8 plots medians)
    r["tokens"] = args.steps * spec["train"]["batch"] * COMMON["context"]
    r["seconds"] = json.loads((run_dir / "done.json").read_text())["seconds"]
    result_file.write_text(json.dumps(r, indent=2))
    return r


def table(args, key):
    spec = COMPARISONS[key]
    rows = []
    for name in spec["models"]:
        try:
            r = evaluate(args, key, name)
        except Exception as e:  # noqa: BLE001 - one failed evaluation should not hide the rest
            print(f"{key}/{name}: {e}", file=sys.stderr)
            r = None
        if r:
            rows.append((name, r))
    rows.sort(key=lambda x: x[1]["full"]["loss"])
    print(f"\n### {key}: {len(rows)} of {len(spec['models'])} models, {args.steps} steps, data {spec['data'].name}\n")
    print("| model | params | val loss | val acc | train loss (median, last 10%) | skip: val loss | tokens | minutes |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        skip = f"{r['skip']['loss']:.3f}" if "skip" in r else ""
        print(f"| {name} | {r['params']:,} | {r['full']['loss']:.3f} | {r['full']['accuracy']:.3f} | "
              f"{r['train_loss_tail']:.3f} | {skip} | {r['tokens']:,} | {r['seconds'] / 60:.1f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("which", nargs="+", choices=sorted(COMPARISONS))
    p.add_argument("--hsm", default=str(Path(__file__).resolve().parents[1] / "build" / "engine" / "cli" / "hsm"))
    p.add_argument("--work", required=True, help="folder for tokenizers, configs, runs and logs")
    p.add_argument("--steps", type=int, default=600, help="optimizer steps per model (batch 32 x context 64)")
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    p.add_argument("--nice", type=int, default=10)
    p.add_argument("--only", nargs="*", help="train only these model names")
    p.add_argument("--table", action="store_true", help="only print the tables of what has finished")
    args = p.parse_args()
    if not args.table:
        jobs = [j for key in args.which for j in prepare(args, key)]
        if args.only:
            jobs = [j for j in jobs if j[1] in args.only]
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(lambda j: train(args, *j), jobs))
    for key in args.which:
        table(args, key)


if __name__ == "__main__":
    main()
