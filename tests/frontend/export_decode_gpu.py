"""Exports a HuggingFace decode step on the GPU, as a user exporting on CUDA does: Qwen2 (the
small config of lpu_frontend.hf) with SDPA attention, on CUDA, f16 and f32, against a static
KV cache (max_cache_len 32, position 5 after a 5-token prefill). The sidecars hold the GPU's
outputs. Run from the repository root on the accelerator machine:
    OUT=DIR python3 tests/frontend/export_decode_gpu.py
"""
import os
import sys

sys.path.insert(0, "python")
import torch  # noqa: E402

from lpu_frontend import hf  # noqa: E402

out = os.environ["OUT"]
for dt, tag in ((torch.float16, "f16"), (torch.float32, "f32")):
    e = hf.export_decode(hf.build("qwen2", attn="sdpa", dtype=dt, device="cuda"),
                         os.path.join(out, f"hf_qwen2_decode_sdpa_ids_gpu_{tag}.json"), max_cache_len=32, position=5)
    print(tag, e.ops)
print(torch.__version__, torch.cuda.get_device_name())
