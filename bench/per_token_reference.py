#!/usr/bin/python3
"""Per-token losses of a run folder recomputed independently of the engine (issue 40).

Loads RUN/model.safetensors and RUN/config.json with PyTorch alone (Debian's python3-torch;
no code of the engine), rebuilds the windows `hsm eval --per-token FILE.jsonl` scored from the
file's own `input` and `target` fields, recomputes every token's loss in float64 and prints the
largest difference from the file's `loss`, its mean difference and both means.

    hsm eval RUN --data CORPUS --per-token tokens.jsonl --json
    /usr/bin/python3 bench/per_token_reference.py RUN tokens.jsonl

A dev tool: no test depends on it. Models: GPT-2 style blocks (docs/architecture.md) with
softmax attention ("attn") or HSM (a,b) ("hsm_ab": y[t] = a·x[t] + b·x[t - 2^layer], HSM eq. 1).
"""
import json
import math
import struct
import sys

import torch

DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
          "I64": torch.int64}


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]])
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out


def layer_norm(x, w, name):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w[name + ".weight"], w[name + ".bias"], 1e-5)


def linear(x, w, name):
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def mixer(x, w, layer, spec):
    p = "blocks.%d.mixer" % layer
    if spec["mixer"] == "hsm_ab":
        s = 1 << layer
        shifted = torch.zeros_like(x)
        if s < x.shape[1]:
            shifted[:, s:] = x[:, :-s]
        return w[p + ".a"] * x + w[p + ".b"] * shifted
    if spec["mixer"] == "attn":
        B, T, d = x.shape
        H = spec["heads"]
        q, k, v = linear(x, w, p + ".qkv").split(d, dim=-1)
        heads = lambda t: t.view(B, T, H, d // H).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // H)
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        y = torch.softmax(att, -1) @ v
        return linear(y.transpose(1, 2).reshape(B, T, d), w, p + ".proj")
    raise SystemExit("per_token_reference.py: mixer %r is not implemented here (attn, hsm_ab)" % spec["mixer"])


def losses(w, config, x, y):
    T = x.shape[1]
    h = w["tok_emb.weight"][x] + w["pos_emb.weight"][:T]
    for l, spec in enumerate(config["layers"]):
        h = h + mixer(layer_norm(h, w, "blocks.%d.ln1" % l), w, l, spec)
        f = linear(layer_norm(h, w, "blocks.%d.ln2" % l), w, "blocks.%d.ffn.fc1" % l)
        h = h + linear(torch.nn.functional.gelu(f), w, "blocks.%d.ffn.fc2" % l)
    logits = layer_norm(h, w, "ln_f") @ w["tok_emb.weight"].T
    return -torch.log_softmax(logits, -1).gather(-1, y.unsqueeze(-1)).squeeze(-1)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: per_token_reference.py RUN_DIR TOKENS.jsonl")
    run, path = sys.argv[1], sys.argv[2]
    config = json.load(open(run + "/config.json"))
    config = config.get("model", config)
    w = load_safetensors(run + "/model.safetensors")
    rows = [json.loads(line) for line in open(path)]
    T = config["context"]
    windows = max(r["window"] for r in rows) + 1
    x = torch.zeros(windows, T, dtype=torch.long)
    y = torch.zeros(windows, T, dtype=torch.long)
    file_loss = torch.zeros(windows, T, dtype=torch.float64)
    for r in rows:
        x[r["window"], r["position"]] = r["input"]
        y[r["window"], r["position"]] = r["target"]
        file_loss[r["window"], r["position"]] = r["loss"]
    with torch.no_grad():
        ref = torch.cat([losses(w, config, x[i:i + 32], y[i:i + 32]) for i in range(0, windows, 32)])
    diff = (ref - file_loss).abs()
    print(json.dumps({"run": run, "tokens": len(rows), "windows": windows,
                      "max_abs_difference": diff.max().item(), "mean_abs_difference": diff.mean().item(),
                      "file_mean_loss": file_loss.mean().item(), "reference_mean_loss": ref.mean().item()}))


if __name__ == "__main__":
    main()
