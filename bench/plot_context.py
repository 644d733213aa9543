#!/usr/bin/python3
"""Plot of `hsm bench --context ... --json` output: training tokens/s against context per model.

  build-speed/engine/cli/hsm bench gpt hsm_ab hybrid_0_6 --context 128,512,1024,2048 --json > ctx.json
  /usr/bin/python3 bench/plot_context.py ctx.json docs/performance_context.png

Solid lines: measured; dotted: the speed each model's FLOP count allows (its speed at the first
context scaled by FLOPs(first) / FLOPs(T)). Needs matplotlib (python3-matplotlib); a dev tool.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    data = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    by_model = {}
    for m in data["models"]:
        by_model.setdefault(m["name"], []).append(m)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rows in by_model.items():
        rows.sort(key=lambda r: r["context"])
        ts = [r["context"] for r in rows]
        line, = ax.plot(ts, [r["train_tokens_per_s"] for r in rows], "o-", label=name + " (measured)")
        base = rows[0]["train_tokens_per_s"]
        ax.plot(ts, [base * r["flops_allow_vs_first_context"] for r in rows], ":", color=line.get_color(),
                label=name + " (FLOPs allow)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["context"] for r in next(iter(by_model.values()))])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("context T (tokens)")
    ax.set_ylabel("training tokens/s")
    ax.set_ylim(bottom=0)
    note = data.get("threads_note", "").replace("; ", "\n")  # one line per part: the figure stays narrow
    ax.set_title("hsm bench: training speed against context\n" + note, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
