"""Tiny PyTorch models covering every op family the frontend must handle (issue 3): each one
is exported, normalised in C++ and checked against PyTorch. Shapes are small so the whole zoo
exports in about a second.

MODELS maps a name to a factory returning (model in eval mode, example inputs).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def seeded(fn):
    def make():
        torch.manual_seed(0)
        return fn()

    make.__doc__ = fn.__doc__
    return make


class RMSNorm(nn.Module):
    """RMSNorm written in plain torch (LLaMA style)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(d) * 0.1 + 1)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rope_tables(seq, dim, base=10000.0):
    """cos/sin tables built from arange: a constant subgraph the exporter folds."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


class Rotary(nn.Module):
    def forward(self, q):
        cos, sin = rope_tables(q.shape[-2], q.shape[-1])
        return q * cos + rotate_half(q) * sin


class CausalSelfAttention(nn.Module):
    """Scaled-dot-product attention written out by hand, causal mask from ones/triu."""

    def __init__(self, d=16, heads=2, rotary=False, mask_style="triu"):
        super().__init__()
        self.h, self.dh, self.rotary, self.mask_style = heads, d // heads, rotary, mask_style
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.h, self.dh).transpose(1, 2)
        k = k.view(B, T, self.h, self.dh).transpose(1, 2)
        v = v.reshape(B, T, self.h, self.dh).permute(0, 2, 1, 3)
        if self.rotary:
            cos, sin = rope_tables(T, self.dh)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))
        if self.mask_style == "triu":
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            att = att.masked_fill(mask, float("-inf"))
        else:
            keep = torch.tril(torch.ones(T, T)) == 1
            att = torch.where(keep, att, torch.full_like(att, -1e9))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class LlamaBlock(nn.Module):
    def __init__(self, d=16, heads=2, ffn=24):
        super().__init__()
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.attn = CausalSelfAttention(d, heads, rotary=True, mask_style="tril")
        self.gate, self.up = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Activations(nn.Module):
    def forward(self, x):
        return F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.relu(x), torch.sigmoid(x), torch.tanh(x)


class Softmaxes(nn.Module):
    def forward(self, x):
        return F.softmax(x, dim=-1), torch.softmax(x, dim=1), F.softmax(x * 3.0, dim=0)


class MatmulFamily(nn.Module):
    def forward(self, a, b, c, v):
        # a [2, 3, 4], b [2, 4, 5], c [2, 3, 5], v [4]
        r1 = torch.matmul(a, b)
        r2 = torch.bmm(a, b)
        r3 = torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)
        r4 = torch.matmul(a.unsqueeze(0), b.unsqueeze(1))  # batch broadcasting [1,2,3,4] x [2,1,4,5]
        r5 = torch.matmul(a, v)  # [..., K] x [K]
        r6 = torch.matmul(v, b)  # [K] x [B, K, N]
        r7 = a[0] @ b[0]  # 2-D mm
        return r1, r2, r3, r4, r5, r6, r7


class Views(nn.Module):
    def forward(self, x):
        # x [2, 3, 4]
        a = x.view(6, 4).reshape(2, 12)
        b = x.permute(2, 0, 1).contiguous()
        c = x.transpose(0, 1)
        d = x[:, :1, :].expand(2, 3, 4)
        e = x[:, 1:, ::2]
        f = torch.cat([x, x * 2], dim=1)
        g = x.unsqueeze(1).squeeze(1).unsqueeze(-1)
        h = x[1]
        i = x.flatten(1)
        j = torch.stack([x[:, 0], x[:, 2]], dim=0)
        k, l = x.chunk(2, dim=-1)
        return a, b, c, d, e, f, g, h, i, j, k * l


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(11, 8)
        self.pos = nn.Embedding(5, 8)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        return self.tok(idx) + self.pos(pos)


class MaskedFillWhere(nn.Module):
    def forward(self, x, mask):
        a = x.masked_fill(mask, 0.0)
        b = torch.where(x > 0, x, x * 0.1)
        c = torch.where(mask, x, torch.zeros_like(x))
        d = x.masked_fill(~mask, float("-inf")).amax(dim=-1)
        return a, b, c, d


class InPlace(nn.Module):
    """In-place ops: functionalization turns them into values."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        y.add_(1.0)
        y.relu_()
        y.mul_(0.5)
        y.masked_fill_(y > 0.7, 0.7)
        return y


class KVCacheUpdate(nn.Module):
    """Writes through views (a KV-cache update): functionalization makes them slice_scatter /
    select_scatter values."""

    def forward(self, cache, k):
        cache = cache.clone()
        cache[:, 2:2 + k.shape[1]] = k
        cache[:, 0] = 0.0
        cache[:, -1].mul_(2.0)
        return cache


class Reductions(nn.Module):
    def forward(self, x):
        return (x.sum(-1), x.mean(dim=(0, 2), keepdim=True), x.amax(1), x.amin(-1, keepdim=True),
                x.var(-1), x.var(1, unbiased=False), x.abs().sqrt(), (x * x + 1).log(), x.pow(3), 1 - x,
                torch.exp(-x), x / 3, x.reciprocal(), torch.maximum(x, -x), torch.minimum(x, x * x))


def _linear():
    return nn.Linear(16, 8), (torch.randn(4, 16),)


def _linear3d():
    return nn.Linear(16, 8), (torch.randn(2, 3, 16),)


MODELS = {
    "linear": seeded(_linear),
    "linear3d": seeded(_linear3d),
    "layer_norm": seeded(lambda: (nn.LayerNorm(16), (torch.randn(2, 3, 16),))),
    "layer_norm_2d": seeded(lambda: (nn.LayerNorm([3, 16]), (torch.randn(2, 3, 16),))),
    "rms_norm": seeded(lambda: (RMSNorm(16), (torch.randn(2, 3, 16),))),
    "activations": seeded(lambda: (Activations(), (torch.randn(3, 8) * 3,))),
    "softmax": seeded(lambda: (Softmaxes(), (torch.randn(2, 3, 5),))),
    "matmul": seeded(lambda: (MatmulFamily(), (torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 3, 5),
                                              torch.randn(4)))),
    "views": seeded(lambda: (Views(), (torch.randn(2, 3, 4),))),
    "embedding": seeded(lambda: (Embedding(), (torch.tensor([[1, 4, 10, 0, 3], [2, 2, 7, 9, 5]]),))),
    "masked_fill_where": seeded(lambda: (MaskedFillWhere(), (torch.randn(3, 6), torch.randn(3, 6) > 0.3))),
    "reductions": seeded(lambda: (Reductions(), (torch.randn(2, 3, 5),))),
    "inplace": seeded(lambda: (InPlace(), (torch.randn(3, 8),))),
    "kv_cache_update": seeded(lambda: (KVCacheUpdate(), (torch.randn(2, 7, 4), torch.randn(2, 3, 4)))),
    "rotary": seeded(lambda: (Rotary(), (torch.randn(1, 2, 6, 8),))),
    "attention": seeded(lambda: (CausalSelfAttention(16, 2), (torch.randn(2, 5, 16),))),
    "gpt_block": seeded(lambda: (GPTBlock(16, 2), (torch.randn(2, 5, 16),))),
    "llama_block": seeded(lambda: (LlamaBlock(16, 2), (torch.randn(2, 5, 16),))),
    "encoder_post_norm": seeded(lambda: (nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True),
                                         (torch.randn(2, 5, 16),))),
    "encoder_pre_norm": seeded(lambda: (nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, activation="gelu",
                                                                   norm_first=True), (torch.randn(5, 2, 16),))),
}


class GPTBlockWithBreak(GPTBlock):
    """A GPT block with a data-dependent check between attention and MLP (an overflow guard:
    Python reads a tensor's value), which Dynamo, and the simulate backend's make_fx route, cut
    into two graphs. Not in MODELS: a single-graph export cannot capture it."""

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        if x.abs().amax().item() > 1e4:
            x = x.clamp(-1e4, 1e4)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


# Models with a graph break (docs/frontend.md, "simulate"): for torch.compile, not for export().
BREAK_MODELS = {
    "gpt_block_break": seeded(lambda: (GPTBlockWithBreak(16, 2), (torch.randn(2, 5, 16),))),
}


def build(name):
    model, inputs = (MODELS[name] if name in MODELS else BREAK_MODELS[name])()
    return model.eval(), inputs
