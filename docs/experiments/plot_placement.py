# Bar chart (SVG) of best val_loss per placement, mean ± std over seeds, from `hsm sweep table --json --group seed`.
# python3 plot_placement.py groups.json out.svg [title]
import json, sys
title = sys.argv[3] if len(sys.argv) > 3 else "best validation loss by placement (mean ± std over 2 seeds)"
g = json.load(open(sys.argv[1]))["groups"]
rows = []
for x in g:
    p = x["settings"].get("model.placement")
    name = p if isinstance(p, str) else "hsm_ab@" + (",".join(map(str, p["layers"])) if isinstance(p["layers"], list) else p["layers"])
    m = x["metrics"]["best_val_loss"]
    if m["mean"] is None: continue
    rows.append((name, m["mean"], m["std"] or 0, m["n"]))
rows.sort(key=lambda r: r[1])
W, H, L, B, T = 760, 420, 70, 110, 40
lo = min(r[1] - r[2] for r in rows); hi = max(r[1] + r[2] for r in rows)
pad = (hi - lo) * 0.15 or 0.05; lo -= pad; hi += pad
y = lambda v: T + (H - T - B) * (hi - v) / (hi - lo)
bw = (W - L - 20) / len(rows)
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
for k in range(6):
    v = lo + (hi - lo) * k / 5
    out.append(f'<line x1="{L}" x2="{W-20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/><text x="{L-6}" y="{y(v)+4:.1f}" text-anchor="end">{v:.3f}</text>')
for i, (name, mean, sd, n) in enumerate(rows):
    x = L + i * bw + bw * 0.15
    colour = "#d62728" if name == "hsm_ab@0,6" else ("#1f77b4" if name != "attn@all" else "#7f7f7f")
    out.append(f'<rect x="{x:.1f}" y="{y(mean):.1f}" width="{bw*0.7:.1f}" height="{(H-B)-y(mean):.1f}" fill="{colour}" opacity="0.8"/>')
    cx = x + bw * 0.35
    out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(mean+sd):.1f}" y2="{y(mean-sd):.1f}" stroke="black"/>')
    out.append(f'<text transform="translate({cx:.1f},{H-B+12}) rotate(40)" font-size="11">{name}</text>')
out.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{H-B}" stroke="black"/>')
out.append('</svg>')
open(sys.argv[2], "w").write("\n".join(out) + "\n")
