"""Exports a small attention module on the GPU, once per SDPA backend (cuDNN, flash,
memory-efficient, math), f16, with lpu_frontend.export: the ops a user exporting on a GPU gets."""
import os, sys, traceback
sys.path.insert(0, "python")  # run from the repository root: OUT=DIR python3 tests/frontend/export_sdpa_gpu.py
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from lpu_frontend.export import export

class Attn(torch.nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.q = torch.nn.Linear(64, 64, bias=False)
        self.k = torch.nn.Linear(64, 64, bias=False)
        self.v = torch.nn.Linear(64, 64, bias=False)
    def forward(self, x):
        B, L, _ = x.shape
        q = self.q(x).view(B, L, 4, 16).transpose(1, 2)
        k = self.k(x).view(B, L, 4, 16).transpose(1, 2)
        v = self.v(x).view(B, L, 4, 16).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal).transpose(1, 2).reshape(B, L, 64)

out = os.environ["OUT"]
torch.manual_seed(0)
BACKENDS = os.environ.get("BACKENDS", "cudnn,flash,efficient,math").split(",")
for name, be in [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                 ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]:
    if name not in BACKENDS: continue
    for causal in (True, False):
        m = Attn(causal).cuda().half().eval()
        x = torch.randn(1, 8, 64, device="cuda", dtype=torch.half)
        stem = f"sdpa_{name}_{'causal' if causal else 'full'}_gpu"
        try:
            with sdpa_kernel([be]):
                e = export(m, (x,), os.path.join(out, stem + ".json"))
            print(stem, "ok", e.ops)
        except Exception as ex:
            print(stem, "FAILED", type(ex).__name__, str(ex)[:400])
            traceback.print_exc(limit=3)
print(torch.__version__, torch.cuda.get_device_name())
