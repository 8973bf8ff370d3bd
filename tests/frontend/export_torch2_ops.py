"""Exports small graphs that exercise core-ATen ops PyTorch 2.x leaves in real graphs (the SDPA
variants of the make_fx route, index with None, topk/scatter routing, cumsum...) into OUT, for
tests/fixtures/torch-2.11/ops/ (checked by ctest `torch211_*`, fused and unfused).

    PYTHONPATH=python python3 tests/frontend/export_torch2_ops.py OUT

Runs on PyTorch >= 2.1 (the accelerator machine has 2.11); prints each graph's ATen ops.
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import lpu_frontend


class Attention(nn.Module):
    """SDPA with grouped-query heads (4 query heads, 2 kv heads), causal or a boolean mask."""

    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.q = nn.Linear(32, 32)
        self.kv = nn.Linear(32, 16)

    def forward(self, x, mask):
        q = self.q(x).view(1, 6, 4, 8).transpose(1, 2)
        k = self.kv(x).view(1, 6, 2, 8).transpose(1, 2)
        v = k * 0.5 + 1
        if self.causal:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return y.transpose(1, 2).reshape(1, 6, 32)


class Routing(nn.Module):
    """Mixture-of-experts style routing: topk, a one-hot by scatter, cumsum, x[:, idx]."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(16, 4)
        self.experts = nn.Parameter(torch.randn(4, 16, 16) * 0.1)

    def forward(self, x):
        w, idx = torch.topk(self.gate(x).softmax(-1), 2, dim=-1)
        onehot = torch.zeros(8, 4).scatter(-1, idx, 1.0)
        counts = torch.cumsum(onehot, 0)
        y = torch.bmm(x.unsqueeze(1), self.experts[idx[:, 0]]).squeeze(1) * w[:, :1]
        cols = x[:, idx[0]]  # index with a None entry
        return y + counts.sum(-1, keepdim=True) + cols.sum(-1, keepdim=True) + torch.cos(x).clamp(min=0.0)


class Decoder(nn.Module):
    """torch.nn.TransformerDecoderLayer (the issue: it stopped at aten.any)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x, memory):
        return self.layer(x, memory)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    mask = torch.rand(1, 1, 6, 6) > 0.3
    mask[..., 0] = True
    x = torch.randn(1, 6, 32)
    jobs = [
        ("sdpa_causal_make_fx", Attention(True), (x, mask), "make_fx"),
        ("sdpa_mask_make_fx", Attention(False), (x, mask), "make_fx"),
        ("sdpa_causal_export", Attention(True), (x, mask), "torch.export"),
        ("routing_export", Routing(), (torch.randn(8, 16),), "torch.export"),
        ("routing_make_fx", Routing(), (torch.randn(8, 16),), "make_fx"),
        ("decoder_layer_export", Decoder(), (torch.randn(1, 5, 32), torch.randn(1, 7, 32)), "torch.export"),
        ("decoder_layer_make_fx", Decoder(), (torch.randn(1, 5, 32), torch.randn(1, 7, 32)), "make_fx"),
    ]
    for name, model, inputs, method in jobs:
        path = os.path.join(out, name + ".json")
        try:
            lpu_frontend.export(model.eval(), inputs, path, method=method)
            with open(path) as f:
                ops = sorted({n["op"] for n in json.load(f)["nodes"] if n["kind"] == "call"})
            print(name, ops)
        except Exception as e:  # noqa: BLE001 - report and go on with the others
            print(name, "FAILED", type(e).__name__, str(e)[:300])


if __name__ == "__main__":
    main(sys.argv[1])
