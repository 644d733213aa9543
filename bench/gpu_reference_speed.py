#!/usr/bin/env python3
"""The plain PyTorch peer's training speed on a GPU (issue 49), for bench/gpu_check.sh.

The engine's presets as bench/reference_model.py builds them, trained the way a PyTorch 2.x user
would on a GPU: attention through F.scaled_dot_product_attention (is_causal), AdamW(fused=True),
bf16 autocast, optionally torch.compile. Random tokens (speed does not depend on the text), the
engine's AdamW settings; one JSON line per (model, batch, mode) on stdout:

  {"model": "gpt", "batch": 256, "context": 128, "mode": "eager", "train_tokens_per_s": ...,
   "compile_s": 0, "steps": 20, "device": "cuda", "torch": "2.11.0+cu130"}

  python3 bench/gpu_reference_speed.py --models gpt hsm_ab --batch 32 256 [--compile] [--steps 20]
      [--device cuda] [--deadline UNIX_SECONDS] [--ready FILE --go FILE]

--deadline: a (model, batch) not started before it is skipped (a line with "skipped").
--ready/--go: compile and warm every model first, create the ready file, wait for the go file, then
time them all (bench/gpu_check.sh compiles while other stages run, and times when the GPU is free).
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


def prepare(name, batch, context, device, compiled):
    """A model, its optimizer and batch, warmed up (compiled): returns (one_step, compile_s)."""
    reference_model.CausalSelfAttention = SdpaSelfAttention  # Block builds its attention from this name
    config = load_preset(name, context)
    torch.manual_seed(0)
    model = Gpt(config).to(device)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                            **({"fused": True} if fused else {}))
    step_fn = torch.compile(model) if compiled else model
    tokens = torch.randint(0, config["vocab_size"], (batch, context + 1), device=device)
    x, y = tokens[:, :-1], tokens[:, 1:]
    model.train()

    def one_step():
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = step_fn(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as `hsm train` and `hsm bench` on CUDA
        opt.step()

    t0 = time.perf_counter()
    for _ in range(3):  # warm-up (and compilation)
        one_step()
    sync(device)
    return one_step, (time.perf_counter() - t0 if compiled else 0.0)


def time_steps(one_step, batch, context, steps, device):
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync(device)
    return batch * context * steps / (time.perf_counter() - t0)


def profile_kernels(one_step, device, prefix):
    """One step under torch.profiler: the kernels' device time summed by name, as `hsm bench --profile`."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        one_step()
        sync(device)
    totals = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            us, n = totals.get(e.name, (0.0, 0))
            totals[e.name] = (us + e.time_range.elapsed_us(), n + 1)
    total = sum(us for us, _ in totals.values())
    with open(prefix + ".kernels.txt", "w") as f:
        f.write("device time of one step: %.3f ms in %d kernel names\n" % (total / 1e3, len(totals)))
        f.write("   ms       %  launches  kernel\n")
        for name, (us, n) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            f.write("%7.3f  %5.1f  %8d  %s\n" % (us / 1e3, 100 * us / max(total, 1e-9), n, name[:160]))
    prof.export_chrome_trace(prefix + ".trace.json")


def wait_for(path, deadline):
    while not os.path.exists(path):
        if deadline and time.time() > deadline:
            return False
        time.sleep(0.2)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["gpt", "hsm_ab", "hybrid_0_6"])
    ap.add_argument("--batch", nargs="+", type=int, default=[32, 256])
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (default: eager)")
    ap.add_argument("--deadline", type=float, default=0, help="skip what would start after this UNIX time")
    ap.add_argument("--ready", help="with --go: warm (compile) every model first, then create this file")
    ap.add_argument("--go", help="with --ready: then wait for this file before timing them all")
    ap.add_argument("--profile", help="also profile one step of each into DIR/peer_MODEL_BATCH_MODE.kernels.txt")
    a = ap.parse_args()
    device = torch.device(a.device)
    mode = "compile" if a.compile else "eager"
    rows, prepared = [], []
    for name in a.models:
        for batch in a.batch:
            row = {"model": name, "batch": batch, "context": a.context, "mode": mode, "steps": a.steps,
                   "device": a.device, "torch": torch.__version__}
            rows.append(row)
            if a.deadline and time.time() > a.deadline:
                row["skipped"] = "out of time"
                continue
            try:
                one_step, row["compile_s"] = prepare(name, batch, a.context, device, a.compile)
                if a.go:  # time them all later, together
                    prepared.append((row, one_step))
                    continue
                row["train_tokens_per_s"] = time_steps(one_step, batch, a.context, a.steps, device)
                if a.profile:
                    profile_kernels(one_step, device, os.path.join(a.profile, "peer_%s_%d_%s" % (name, batch, mode)))
            except Exception as e:  # noqa: BLE001 - reported, the next model still runs
                row["error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
            print(json.dumps(row), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if a.go:
        if a.ready:
            open(a.ready, "w").close()
        if not wait_for(a.go, a.deadline):
            for row, _ in prepared:
                row["skipped"] = "no go before the deadline"
        else:
            for row, one_step in prepared:
                try:
                    row["train_tokens_per_s"] = time_steps(one_step, row["batch"], a.context, a.steps, device)
                except Exception as e:  # noqa: BLE001
                    row["error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
        for row, _ in prepared:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
