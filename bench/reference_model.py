"""Plain PyTorch implementation of the engine's model, for speed comparisons (issue 9).

The same architecture as engine/src/model/ (HSM §6.1, docs/checkpoint-format.md), written the
way a PyTorch user would write it (nanoGPT style): pre-LayerNorm GPT-2 blocks, tied output,
a per-layer mixer that is causal softmax attention (`attn`) or HSM (a,b) (`hsm_ab`).
Built from the engine's preset JSON files, so `gpt`, `hsm_ab` and `hybrid_0_6` are the
engine's presets. A development tool: not part of the product or of `make test`.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "presets")


def load_preset(name, context=None):
    with open(os.path.join(PRESETS, name + ".json")) as f:
        config = json.load(f)
    if context:
        config["context"] = context
    return config


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = self.attn_drop(F.softmax(att.masked_fill(mask, float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, d)
        return self.proj(y)


class ShiftAB(nn.Module):
    """HSM (a,b), eq. 1: y = a·x + b·x[t - s]; s = 2^layer."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift
        self.a = nn.Parameter(torch.tensor(0.5))
        self.b = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        s = self.shift
        xs = F.pad(x[:, :-s], (0, 0, s, 0)) if s < x.size(1) else torch.zeros_like(x)
        return self.a * x + self.b * xs


class Block(nn.Module):
    def __init__(self, config, layer):
        super().__init__()
        spec, d = config["layers"][layer], config["d_model"]
        self.ln1 = nn.LayerNorm(d)
        if spec["mixer"] == "attn":
            self.mixer = CausalSelfAttention(d, spec["heads"], config["dropout"])
        elif spec["mixer"] == "hsm_ab":
            self.mixer = ShiftAB(2 ** layer)
        else:
            raise ValueError("the reference implements attn and hsm_ab, not " + spec["mixer"])
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, spec["ffn"])
        self.fc2 = nn.Linear(spec["ffn"], d)
        self.drop = nn.Dropout(config["dropout"])

    def forward(self, h):
        h = h + self.drop(self.mixer(self.ln1(h)))
        return h + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(h)))))


class Gpt(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        d = config["d_model"]
        self.tok_emb = nn.Embedding(config["vocab_size"], d)
        self.pos_emb = nn.Embedding(config["context"], d)
        self.drop = nn.Dropout(config["dropout"])
        self.blocks = nn.ModuleList(Block(config, l) for l in range(len(config["layers"])))
        self.ln_f = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets=None):
        T = idx.size(1)
        h = self.drop(self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))
        for block in self.blocks:
            h = block(h)
        logits = self.ln_f(h) @ self.tok_emb.weight.t()
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
