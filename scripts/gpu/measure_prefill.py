#!/usr/bin/env python3
"""Prefill latencies of LLaMA-2-7B and OPT-1.3B on a GPU: the table the serve layer's GPU
step-cost model (workbench/serve/gpu_model.h, configs/gpus/*.yaml) is calibrated against.

The models are built from their published shapes with random weights (the machine that runs this
has no internet, and weights do not change the time), fp16, eval, no grad, PyTorch's SDPA
attention, through Hugging Face transformers when it is there (what most users run); a built-in
plain-PyTorch decoder of the same shapes is the fallback, so the run always yields a table (the
rows say which one ran). One forward pass over the prompt with use_cache=True is one prefill;
only the last position's logits are computed (logits_to_keep=1), as a serving engine does.

Two times per point (docs/gpu/prefill-h200-2026-12-03.md): the wall time of the forward (CUDA
events around it, warm-up passes first, the median of several repetitions), and the GPU's busy
time (the sum of the forward's kernel durations, torch.profiler, the mean of 3 forwards), split
into GEMM, attention and other kernels. Eager PyTorch on a slow host is issue-bound for short prompts (the wall time
is the host's); the busy time is what an engine that keeps the GPU fed approaches. --compile adds
the same prefills through torch.compile (Inductor fuses the elementwise kernels, as serving
engines do). Besides batch-1 prompts it times a few batch sizes, prompt chunks on top of a cached
context (chunked prefill) and decode steps, so the model's attention and weight terms are checked
apart. It also measures the GPU's two ceilings (a large fp16 GEMM, a device-to-device copy), the
host's per-op issue time and, with --power-s, the average board power while prefilling (NVML).

Outputs in --out: prefill.jsonl (one row per point and variant), meta.json (GPU, versions,
ceilings, the models as built). The last lines printed are a short table.

usage: python3 measure_prefill.py --out DIR [--device cuda] [--tiny] [--models llama2-7b,opt-1.3b]
--tiny shrinks the models and the sweep so the script's logic can be tried on a CPU.
"""
import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)

# ---- the models' shapes -------------------------------------------------------------------------

MODELS = {
    "llama2-7b": dict(family="llama", layers=32, d_model=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000,
                      max_position=4096),
    "opt-1.3b": dict(family="opt", layers=24, d_model=2048, heads=32, kv_heads=32, ffn=8192, vocab=50272,
                     max_position=2048),
}


def tiny_dims(dims):
    small = dict(dims)
    small.update(layers=2, d_model=128, heads=4, kv_heads=4, ffn=256, vocab=512)
    return small


# ---- the sweep ----------------------------------------------------------------------------------
# (kind, batch, context_before, new_tokens). prefill: a whole prompt; chunk: new tokens on top of
# a cached context (chunked prefill); decode: one token per sequence at that context.

def sweep(name, tiny):
    if tiny:
        return [("prefill", 1, 0, 16), ("prefill", 2, 0, 32), ("chunk", 1, 32, 16), ("decode", 2, 32, 1)]
    max_len = MODELS[name]["max_position"]
    rows = [("prefill", 1, 0, n) for n in (16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
            if n <= max_len]
    for b, lens in ((2, (256, 1024)), (4, (64, 256, 512, 1024, 2048)), (8, (32, 128, 512, 1024, 2048)),
                    (16, (32, 128, 512)), (32, (16, 64, 256))):
        rows += [("prefill", b, 0, n) for n in lens if n <= max_len and b * n <= 8192]
    for ctx, new in ((512, 512), (1024, 256), (1024, 1024), (1536, 512), (3072, 1024), (2048, 2048)):
        if ctx + new <= max_len:
            rows.append(("chunk", 1, ctx, new))
    for b, ctx in ((1, 128), (1, 1024), (8, 512), (8, 1024), (32, 512), (32, 1024)):
        rows.append(("decode", b, ctx, 1))
    return rows


# ---- building a model ---------------------------------------------------------------------------

def build_hf(name, dims, device, dtype):
    """A transformers model with random weights, or an exception (the caller falls back)."""
    import transformers

    if dims["family"] == "llama":
        cfg = transformers.LlamaConfig(hidden_size=dims["d_model"], intermediate_size=dims["ffn"],
                                       num_hidden_layers=dims["layers"], num_attention_heads=dims["heads"],
                                       num_key_value_heads=dims["kv_heads"], vocab_size=dims["vocab"],
                                       max_position_embeddings=dims["max_position"])
        cls = transformers.LlamaForCausalLM
    else:
        cfg = transformers.OPTConfig(hidden_size=dims["d_model"], ffn_dim=dims["ffn"], num_hidden_layers=dims["layers"],
                                     num_attention_heads=dims["heads"], vocab_size=dims["vocab"],
                                     max_position_embeddings=dims["max_position"], word_embed_proj_dim=dims["d_model"])
        cls = transformers.OPTForCausalLM
    attn = "sdpa"
    try:
        cfg._attn_implementation = "sdpa"
    except Exception:  # noqa: BLE001 - some versions refuse for a model without SDPA
        attn = "eager"
        cfg._attn_implementation = "eager"
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = cls(cfg)
    finally:
        torch.set_default_dtype(old)
    model = model.to(device=device, dtype=dtype).eval()
    attn = getattr(model.config, "_attn_implementation", attn)
    return model, f"transformers-{transformers.__version__}", attn


class Block(nn.Module):
    """One decoder layer of either family, as the published models compute it."""

    def __init__(self, dims):
        super().__init__()
        d, h, kvh = dims["d_model"], dims["heads"], dims["kv_heads"]
        self.llama = dims["family"] == "llama"
        self.h, self.kvh, self.hd = h, kvh, d // h
        bias = not self.llama
        self.q = nn.Linear(d, d, bias=bias)
        self.k = nn.Linear(d, kvh * self.hd, bias=bias)
        self.v = nn.Linear(d, kvh * self.hd, bias=bias)
        self.o = nn.Linear(d, d, bias=bias)
        if self.llama:
            norm = nn.RMSNorm if hasattr(nn, "RMSNorm") else nn.LayerNorm  # torch < 2.4: same cost class
            self.n1, self.n2 = norm(d), norm(d)
            self.gate = nn.Linear(d, dims["ffn"], bias=False)
            self.up = nn.Linear(d, dims["ffn"], bias=False)
            self.down = nn.Linear(dims["ffn"], d, bias=False)
        else:
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.up = nn.Linear(d, dims["ffn"])
            self.down = nn.Linear(dims["ffn"], d)

    def forward(self, x, cache, pos):
        b, t, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, t, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(b, t, self.kvh, self.hd).transpose(1, 2)
        if self.llama:  # rotary embedding
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, device=x.device, dtype=torch.float32) / self.hd))
            ang = torch.outer(torch.arange(pos, pos + t, device=x.device, dtype=torch.float32), inv)
            cos, sin = torch.cat((ang, ang), -1).cos().to(x.dtype), torch.cat((ang, ang), -1).sin().to(x.dtype)
            rot = lambda z: torch.cat((-z[..., self.hd // 2:], z[..., : self.hd // 2]), -1)  # noqa: E731
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        if cache is not None:
            k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
        a = attention(q, k, v, pos)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        y = self.n2(x)
        y = self.down(F.silu(self.gate(y)) * self.up(y)) if self.llama else self.down(F.relu(self.up(y)))
        return x + y, (k, v)


def attention(q, k, v, pos):
    t, s = q.shape[2], k.shape[2]
    if hasattr(F, "scaled_dot_product_attention"):
        if pos == 0:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        mask = torch.ones(t, s, dtype=torch.bool, device=q.device).tril(diagonal=s - t)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    w = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # torch < 2.0 (tried on a CPU only)
    w = w.masked_fill(~torch.ones(t, s, dtype=torch.bool, device=q.device).tril(diagonal=s - t), float("-inf"))
    return torch.softmax(w.float(), -1).to(q.dtype) @ v


class PlainDecoder(nn.Module):
    """The fallback: the same shapes in plain PyTorch, with a list of (K, V) as its cache."""

    def __init__(self, dims):
        super().__init__()
        self.embed = nn.Embedding(dims["vocab"], dims["d_model"])
        self.pos = None if dims["family"] == "llama" else nn.Embedding(dims["max_position"], dims["d_model"])
        self.blocks = nn.ModuleList(Block(dims) for _ in range(dims["layers"]))
        self.norm = nn.LayerNorm(dims["d_model"])
        self.head = nn.Linear(dims["d_model"], dims["vocab"], bias=False)

    def forward(self, input_ids, past_key_values=None, use_cache=True, logits_to_keep=1):
        pos = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        x = self.embed(input_ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(pos, pos + input_ids.shape[1], device=x.device))
        caches = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, None if past_key_values is None else past_key_values[i], pos)
            caches.append(kv)
        logits = self.head(self.norm(x[:, -logits_to_keep:]))
        return Output(logits, caches)


class Output:
    def __init__(self, logits, past_key_values):
        self.logits, self.past_key_values = logits, past_key_values


def build_plain(dims, device, dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype if device != "cpu" else torch.float32)
    try:
        with torch.device(device) if device != "cpu" else nullctx():
            model = PlainDecoder(dims)
    finally:
        torch.set_default_dtype(old)
    model = model.to(device=device, dtype=dtype if device != "cpu" else torch.float32).eval()
    return model, "plain-torch", "sdpa" if hasattr(F, "scaled_dot_product_attention") else "manual"


class nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def build(name, dims, device, dtype, impl):
    if impl in ("auto", "hf"):
        try:
            return build_hf(name, dims, device, dtype)
        except Exception:  # noqa: BLE001 - the fallback keeps the run useful; the log says why
            if impl == "hf":
                raise
            print(f"[{name}] transformers model failed, using the plain PyTorch decoder:", file=sys.stderr)
            traceback.print_exc()
    return build_plain(dims, device, dtype)


# ---- timing -------------------------------------------------------------------------------------

class Timer:
    """CUDA events on a GPU, the host clock (after a synchronize) elsewhere."""

    def __init__(self, device):
        self.cuda = device.startswith("cuda")

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time_ms(self, fn):
        """(elapsed ms of fn, host ms until fn returned without waiting for the GPU)."""
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            h0 = time.perf_counter()
            fn()
            host = (time.perf_counter() - h0) * 1e3
            end.record()
            end.synchronize()
            return start.elapsed_time(end), host
        h0 = time.perf_counter()
        fn()
        host = (time.perf_counter() - h0) * 1e3
        return host, host


def forward_fn(model, ids, cache, logits_kw):
    def run():
        kw = dict(use_cache=True, **logits_kw)
        if cache is not None:
            kw["past_key_values"] = cache
        return model(ids, **kw)

    return run


def logits_kwargs(model, ids):
    """Only the last position's logits, where the model's forward takes the argument."""
    for kw in ({"logits_to_keep": 1}, {"num_logits_to_keep": 1}):
        try:
            with torch.no_grad():
                out = model(ids, use_cache=True, **kw)
            if out.logits.shape[1] == 1:
                return kw, "last"
        except TypeError:
            continue
    return {}, "all"


def fresh_cache(model, ctx_ids, logits_kw):
    """The KV cache of a context, made anew for each timed pass (a forward appends to it)."""
    if ctx_ids is None:
        return None
    with torch.no_grad():
        return model(ctx_ids, use_cache=True, **logits_kw).past_key_values


def measure_point(model, timer, device, vocab, point, logits_kw, budget_s):
    """Wall time of one forward (CUDA events; median over repetitions) and its inputs."""
    kind, batch, ctx, new = point
    gen = torch.Generator(device="cpu").manual_seed(1000 + batch * 7 + ctx * 3 + new)
    ids = torch.randint(0, vocab, (batch, new), generator=gen).to(device)
    ctx_ids = torch.randint(0, vocab, (batch, ctx), generator=gen).to(device) if ctx else None
    times, hosts = [], []
    warm, reps, t0 = 2, 0, time.perf_counter()
    first_s = None
    with torch.no_grad():
        while True:
            cache = fresh_cache(model, ctx_ids, logits_kw)
            timer.sync()
            h0 = time.perf_counter()
            ms, host = timer.time_ms(forward_fn(model, ids, cache, logits_kw))
            first_s = first_s if first_s is not None else time.perf_counter() - h0  # compiling, if any
            del cache
            if warm > 0:
                warm -= 1
                continue
            times.append(ms)
            hosts.append(host)
            reps += 1
            if reps >= 15 or (reps >= 5 and time.perf_counter() - t0 > budget_s):
                break
    times.sort()
    row = dict(kind=kind, batch=batch, context_before=ctx, new_tokens=new, tokens=batch * new,
               ms_median=round(statistics.median(times), 4), ms_min=round(times[0], 4),
               ms_max=round(times[-1], 4), reps=reps, host_issue_ms=round(statistics.median(hosts), 4))
    if first_s > 2:
        row["first_call_s"] = round(first_s, 1)
    return row, ids, ctx_ids


def kernel_times(model, ids, ctx_ids, logits_kw, passes=3):
    """The GPU's busy time in one forward: the sum of its kernels' durations (torch.profiler),
    by kernel class, in ms, and the kernels launched; the mean over `passes` forwards. Without
    the host's issue gaps this is what a serving engine that keeps the GPU fed approaches."""
    from torch.profiler import ProfilerActivity, profile

    by, kernels = {"gemm": 0.0, "attention": 0.0, "other": 0.0}, 0
    with torch.no_grad():
        for _ in range(passes):
            cache = fresh_cache(model, ctx_ids, logits_kw)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                forward_fn(model, ids, cache, logits_kw)()
                torch.cuda.synchronize()
            del cache
            for e in prof.events():
                if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
                    continue
                if e.name.startswith("Memcpy") or e.name.startswith("Memset"):
                    continue  # not kernels of the model's arithmetic; tiny
                by[kernel_class(e.name)] += e.time_range.elapsed_us()
                kernels += 1
    out = {f"gpu_{k}_ms": round(v / passes / 1e3, 4) for k, v in by.items()}
    out["gpu_ms"] = round(sum(by.values()) / passes / 1e3, 4)
    out["kernels"] = round(kernels / passes)
    return out


# ---- power (NVML), when the machine lets us read it ----------------------------------------------

class Power:
    def __init__(self, device):
        self.handle = None
        if not device.startswith("cuda"):
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as e:  # noqa: BLE001 - power is extra; the table stands without it
            print(f"NVML energy counter not readable: {e}", file=sys.stderr)
            self.handle = None

    def average_w(self, fn, timer, seconds=0.6):
        """Mean board power over repeated calls of fn for about `seconds` (None if unreadable)."""
        if self.handle is None:
            return None
        timer.sync()
        e0, t0 = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            fn()
            timer.sync()
        e1, t1 = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle), time.perf_counter()
        return round((e1 - e0) / 1e3 / (t1 - t0), 1)

    def info(self):
        if self.handle is None:
            return {}
        out = {}
        for key, call in (("power_limit_w", lambda: self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3),
                          ("sm_clock_max_mhz", lambda: self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, 1)),
                          ("mem_clock_max_mhz", lambda: self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, 2)),
                          ("driver", lambda: self.nvml.nvmlSystemGetDriverVersion())):
            try:
                v = call()
                out[key] = v.decode() if isinstance(v, bytes) else v
            except Exception:  # noqa: BLE001
                pass
        return out


# ---- the machine's ceilings ---------------------------------------------------------------------

def ceilings(device, timer, tiny):
    """Measured fp16 GEMM rate, copy bandwidth and per-op issue time: the config's leads."""
    n = 256 if tiny else 8192
    dtype = torch.float16 if device != "cpu" else torch.float32
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    gemm = sorted(timer.time_ms(lambda: a @ b)[0] for _ in range(10))
    elems = (1 << 16) if tiny else (1 << 30)  # 2 GiB of fp16
    src = torch.randn(elems, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    copy = sorted(timer.time_ms(lambda: dst.copy_(src))[0] for _ in range(10))
    small = torch.randn(1024, device=device, dtype=dtype)
    ops = 2000

    def many():
        for _ in range(ops):
            small.add_(1.0)

    many()
    gpu_ms, host_ms = timer.time_ms(many)
    return dict(gemm_n=n, gemm_tflops=round(2 * n**3 / (statistics.median(gemm) * 1e-3) / 1e12, 1),
                copy_bytes=2 * src.numel() * src.element_size(),
                copy_gbps=round(2 * src.numel() * src.element_size() / (statistics.median(copy) * 1e-3) / 1e9, 1),
                small_op_host_us=round(host_ms * 1e3 / ops, 2), small_op_gpu_us=round(gpu_ms * 1e3 / ops, 2))


# ---- kernel classes (for the census of each point) ----------------------------------------------

def kernel_class(name):
    n = name.lower()
    if any(s in n for s in ("flash", "fmha", "attention", "attn", "sdpa")):
        return "attention"
    if any(s in n for s in ("gemm", "cutlass", "xmma", "nvjet", "cublas", "matmul", "gemv", "sm90_", "sm80_")):
        return "gemm"
    return "other"


# ---- main ---------------------------------------------------------------------------------------

def run_points(name, variant, model, dims, args, timer, power, logits_kw, out_rows, write):
    """Every point of the sweep on one model variant; rows are written as they come, so a run cut
    short keeps what it measured."""
    cuda = args.device.startswith("cuda")
    for point in sweep(name, args.tiny):
        if variant == "compiled" and point[0] != "prefill":
            continue  # the cached paths would compile again; eager covers them
        if time.perf_counter() > args.deadline:
            print(f"[{name}/{variant}] deadline reached, skipping {point}", file=sys.stderr)
            continue
        try:
            row, ids, ctx_ids = measure_point(model, timer, args.device, dims["vocab"], point, logits_kw, args.budget_s)
            if cuda and not args.no_profile:
                row.update(kernel_times(model, ids, ctx_ids, logits_kw))
            if point[0] == "prefill" and variant == "eager" and args.power_s > 0:
                with torch.no_grad():
                    row["power_w"] = power.average_w(forward_fn(model, ids, None, logits_kw), timer, args.power_s)
        except OOM as e:
            print(f"[{name}] {point}: {e}", file=sys.stderr)
            torch.cuda.empty_cache() if cuda else None
            continue
        row.update(model=name, variant=variant)
        out_rows.append(row)
        write()
        print(json.dumps(row), flush=True)


def build_model(name, args):
    dims = MODELS[name] if not args.tiny else tiny_dims(MODELS[name])
    dtype = torch.float16 if args.device != "cpu" else torch.float32
    t0 = time.perf_counter()
    model, impl, attn = build(name, dims, args.device, dtype, args.impl)
    params = sum(p.numel() for p in model.parameters())
    probe = torch.randint(0, dims["vocab"], (1, 8)).to(args.device)
    logits_kw, logits = logits_kwargs(model, probe)
    info = dict(model=name, impl=impl, attention=attn, logits=logits, dtype=str(dtype).replace("torch.", ""),
                params=params, dims=dims, build_s=round(time.perf_counter() - t0, 1))
    print(json.dumps(info), flush=True)
    return model, dims, logits_kw, info


def run_compiled(name, built, args, timer, power, rows, write):
    """The prefills again through torch.compile (dynamic shapes: one compile per shape class)."""
    model, dims, logits_kw, info = built
    try:
        import torch._dynamo as dynamo  # binds `dynamo`, not the name torch (local to this function)

        dynamo.config.cache_size_limit = 64  # past it dynamo would fall back to eager, silently
        t0 = time.perf_counter()
        compiled = torch.compile(model, dynamic=True)
        run_points(name, "compiled", compiled, dims, args, timer, power, logits_kw, rows, write)
        info["compiled_s"] = round(time.perf_counter() - t0, 1)
    except Exception:  # noqa: BLE001 - the eager rows stand without it
        print(f"[{name}/compiled] failed:", file=sys.stderr)
        traceback.print_exc()


def meta_info(args, power):
    meta = dict(date_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), torch=torch.__version__,
                python=platform.python_version(), host=platform.node(), device=args.device)
    try:
        import transformers

        meta["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        meta["transformers"] = None
    if args.device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        meta.update(gpu=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                    cuda=torch.version.cuda, capability=f"{p.major}.{p.minor}")
        meta.update(power.info())
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--models", default="llama2-7b,opt-1.3b")
    ap.add_argument("--impl", choices=("auto", "hf", "plain"), default="auto")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile'd prefills (Inductor)")
    ap.add_argument("--budget-s", type=float, default=0.6, help="timed seconds per point (5..15 reps)")
    ap.add_argument("--power-s", type=float, default=0.0, help="seconds of repeated prefill per power reading")
    ap.add_argument("--deadline-s", type=float, default=540, help="skip the points left after this long")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()
    args.deadline = time.perf_counter() + args.deadline_s
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    timer, power = Timer(args.device), Power(args.device)
    meta = meta_info(args, power)
    meta["ceilings"] = ceilings(args.device, timer, args.tiny)
    meta["models"] = []
    print(json.dumps(meta), flush=True)
    rows = []

    def write():
        with open(os.path.join(args.out, "prefill.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        with open(os.path.join(args.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)

    built = {}
    for name in args.models.split(","):  # eager first, both models: the table the fit needs
        try:
            built[name] = build_model(name, args)
            meta["models"].append(built[name][3])
            run_points(name, "eager", built[name][0], built[name][1], args, timer, power, built[name][2], rows, write)
        except Exception:  # noqa: BLE001 - one model failing leaves the other's rows
            traceback.print_exc()
        write()
    if args.compile:  # smallest model first: its compile is the quickest
        for name in sorted(built, key=lambda n: built[n][3]["params"]):
            run_compiled(name, built[name], args, timer, power, rows, write)
            write()
    print("\nmodel       variant  kind     batch context  new   wall_ms   gpu_ms  (gemm  attn  other) kernels")
    for r in rows:
        print(f"{r['model']:<11} {r['variant']:<8} {r['kind']:<8} {r['batch']:>5} {r['context_before']:>7} "
              f"{r['new_tokens']:>5} {r['ms_median']:>8.2f} {r.get('gpu_ms', 0):>8.2f} "
              f"({r.get('gpu_gemm_ms', 0):.2f} {r.get('gpu_attention_ms', 0):.2f} {r.get('gpu_other_ms', 0):.2f}) "
              f"{r.get('kernels', '-')}")


if __name__ == "__main__":
    main()
