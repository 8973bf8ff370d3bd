"""lpu's reference data for GPU and CPU harnesses: its random inputs regenerated bit for bit (the
LCG of ref/tensor.cpp), the `--emit triton-data` loaders, and the repository's tolerances. Used by
scripts/triton_check.py (on a GPU machine: torch and triton only) and tests/torch_graph_test.py
(Debian's CPU PyTorch). Imports nothing but the standard library; torch is passed in."""
import importlib.util
import os

_A = 6364136223846793005
_C = 1442695040888963407
_M64 = (1 << 64) - 1


def _i64(x):
    x &= _M64
    return x - (1 << 64) if x >= (1 << 63) else x


def lcg_bits(torch, seed, n):
    """The 24-bit draws of ref/tensor.cpp's random_tensor (state = state * A + C mod 2^64, bits 40..63),
    vectorised by doubling: state[j + k] = map^k(state[j])."""
    s = (seed * _A + _C) & _M64
    states = torch.empty(max(n, 1), dtype=torch.int64)
    states[0] = _i64(s * _A + _C)
    k, ak, ck = 1, _A, _C
    while k < n:
        m = min(k, n - k)
        states[k:k + m] = states[:m] * _i64(ak) + _i64(ck)  # int64 arithmetic wraps mod 2^64
        ck = (ak * ck + ck) & _M64
        ak = (ak * ak) & _M64
        k *= 2
    return ((states >> 40) & 0xFFFFFF)[:n]


def lcg_tensor(torch, seed, shape, dtype, scale=1.0):
    """ref/tensor.cpp's random_tensor, then ref/reference.cpp's weight scale: uniform [-1, 1) in
    fp32, rounded to f16/bf16, times `scale` (fp32) and rounded again."""
    n = 1
    for d in shape:
        n *= d
    bits = lcg_bits(torch, seed, n)
    if dtype in ("i64", "i32"):
        v = (bits % 8).to(torch.float32)
    else:
        v = bits.to(torch.float32) / float(1 << 23) - 1.0
        if dtype == "bool":
            v = (v > 0).to(torch.float32)
    half = {"f16": torch.float16, "bf16": torch.bfloat16}.get(dtype)
    if half is not None:
        v = v.to(half).to(torch.float32)
    if scale != 1.0:
        v = v * torch.tensor(scale, dtype=torch.float32)
        if half is not None:
            v = v.to(half).to(torch.float32)
    return v.reshape(shape)


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def to_dtype(torch, t, dtype):
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}[dtype]
    if dtype == "bool":
        return t != 0
    return t.to(dt)


def data_inputs(torch, wdir, data):
    raw = open(os.path.join(wdir, data["bin"]), "rb").read()

    def tensor(e):
        if "offset" in e:
            t = torch.frombuffer(bytearray(raw[e["offset"]:e["offset"] + 4 * e["numel"]]), dtype=torch.float32)
            return t.reshape(e["shape"])
        return lcg_tensor(torch, e["lcg_seed"], e["shape"], e["dtype"], e.get("lcg_scale", 1.0))

    ins = {k: to_dtype(torch, tensor(e), e["dtype"]) for k, e in data["inputs"].items()}
    outs = {k: tensor(e) for k, e in data["outputs"].items()}
    return ins, outs


def random_inputs(torch, plan, device, seed=0):
    """Seeded random inputs, made on `device` (a 7B model's weights do not want a trip through the CPU):
    floats uniform in [-1, 1), indices below the plan's index_bound (the gathered table's rows) or 8."""
    g = torch.Generator(device=device).manual_seed(seed)
    ins = {}
    for b in plan["buffers"]:
        if b["storage"] != "input":
            continue
        shape, dt = b["shape"], b["dtype"]
        if dt in ("i64", "i32"):
            t = torch.randint(0, b.get("index_bound", 8), shape, generator=g, device=device)
        elif dt == "bool":
            t = torch.rand(shape, generator=g, device=device) > 0.5
        else:
            t = torch.rand(shape, generator=g, device=device) * 2 - 1
        ins[b["name"]] = to_dtype(torch, t, dt)
    return ins


def tolerance(plan, data):
    return tolerance_for(any(b["dtype"] in ("f16", "bf16") for b in plan["buffers"]), data)


def tolerance_for(half, data):
    """The repository's tolerances: against PyTorch's outputs |a-e| <= tol * max(1, |e|), against lpu's
    reference executor atol + rtol * |e|; tighter for fp32 than for f16/bf16 graphs."""
    if data and data.get("reference", "").startswith("PyTorch"):
        return (0.0, 2e-2 if half else 1e-4, "|a-e| <= tol * max(1, |e|)")
    return (5e-2, 5e-2, "|a-e| <= atol + rtol * |e|") if half else (1e-4, 1e-4, "|a-e| <= atol + rtol * |e|")


def compare(torch, got, want, tol):
    atol, rtol, rule = tol
    worst, ok = 0.0, True
    for name, e in want.items():
        a = got[name].detach().float().cpu().reshape(e.shape)
        e = e.float()
        err = (a - e).abs()
        err = torch.where(torch.isnan(a) != torch.isnan(e), torch.full_like(err, float("inf")), err)
        err = torch.nan_to_num(err, nan=0.0)
        bound = (rtol * torch.clamp(e.abs(), min=1.0)) if rule.startswith("|a-e| <= tol") else (atol + rtol * e.abs())
        worst = max(worst, float(err.max()) if err.numel() else 0.0)
        ok = ok and bool((err <= torch.nan_to_num(bound, nan=0.0)).all())
    return ok, worst
