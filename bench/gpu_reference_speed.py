#!/usr/bin/env python3
"""The plain PyTorch peer's training speed on a GPU (issue 49), for bench/gpu_check.sh.

The engine's presets as bench/reference_model.py builds them, trained the way a PyTorch 2.x user
would on a GPU: attention through F.scaled_dot_product_attention (is_causal), AdamW(fused=True),
bf16 autocast, optionally torch.compile. Random tokens (speed does not depend on the text), the
engine's AdamW settings; one JSON line per (model, batch, mode) on stdout:

  {"model": "gpt", "batch": 256, "context": 128, "mode": "eager", "train_tokens_per_s": ...,
   "compile_s": 0, "steps": 20, "device": "cuda", "torch": "2.11.0+cu130"}

  python3 bench/gpu_reference_speed.py --models gpt hsm_ab --batch 32 256 [--compile] [--steps 20]
      [--device cuda] [--deadline UNIX_SECONDS]

--deadline: a (model, batch) not started before it is skipped (a line with "skipped").
A development tool: not part of the product or of `make test`.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_model  # noqa: E402
from reference_model import Gpt, load_preset  # noqa: E402


class SdpaSelfAttention(reference_model.CausalSelfAttention):
    """The reference attention through PyTorch's fused kernel (flash / memory-efficient)."""

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        p = self.attn_drop.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, d))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(name, batch, context, steps, device, compiled):
    reference_model.CausalSelfAttention = SdpaSelfAttention  # Block builds its attention from this name
    config = load_preset(name, context)
    torch.manual_seed(0)
    model = Gpt(config).to(device)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                            **({"fused": True} if fused else {}))
    step_fn = model
    t_compile = 0.0
    if compiled:
        step_fn = torch.compile(model)
    tokens = torch.randint(0, config["vocab_size"], (batch, context + 1), device=device)
    x, y = tokens[:, :-1], tokens[:, 1:]
    model.train()

    def one_step():
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = step_fn(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    t0 = time.perf_counter()
    for _ in range(3):  # warm-up (and compilation)
        one_step()
    sync(device)
    if compiled:
        t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync(device)
    secs = time.perf_counter() - t0
    return batch * context * steps / secs, t_compile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["gpt", "hsm_ab", "hybrid_0_6"])
    ap.add_argument("--batch", nargs="+", type=int, default=[32, 256])
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (default: eager)")
    ap.add_argument("--deadline", type=float, default=0, help="skip what would start after this UNIX time")
    a = ap.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    mode = "compile" if a.compile else "eager"
    for name in a.models:
        for batch in a.batch:
            row = {"model": name, "batch": batch, "context": a.context, "mode": mode, "steps": a.steps,
                   "device": a.device, "torch": torch.__version__}
            if a.deadline and time.time() > a.deadline:
                row["skipped"] = "out of time"
            else:
                try:
                    row["train_tokens_per_s"], row["compile_s"] = measure(name, batch, a.context, a.steps, device,
                                                                          a.compile)
                except Exception as e:  # noqa: BLE001 - reported, the next model still runs
                    row["error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
            print(json.dumps(row), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
