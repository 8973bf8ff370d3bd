#!/usr/bin/env python3
"""Run lpu's emitted Triton modules on a GPU: check them against the reference and time greedy vs none.

Needs only torch and triton (no lpu binary): everything comes from a directory that
scripts/triton_emit.sh writes on a machine with build/lpu:

    ROOT/<workload>/none/triton_kernels.py      lpu compile W --fusion none   --emit triton
    ROOT/<workload>/greedy/triton_kernels.py    lpu compile W --fusion greedy --emit triton
    ROOT/<workload>/triton_data.{json,bin}      lpu compile W --emit triton-data  (optional)

With triton_data the inputs are the ones lpu's reference used (stored, or regenerated from the
seed of lpu's LCG, ref/tensor.cpp) and the outputs are compared with the reference's; without it
the inputs are random (seeded) and greedy is compared with none only.

    python3 scripts/triton_check.py ROOT [--only a,b] [--iters 50] [--warmup 10] [--out results.jsonl]

Prints one JSON line per workload (and writes them to --out, plus a CSV next to it): kernels,
max error and pass/fail per policy, non-finite output elements, median milliseconds of launch()
(CUDA events, after warmup), the greedy speedup, and the largest greedy-vs-none difference (inf
where only one of them is NaN). Exit 0 when every check passed.
`--device cpu` with TRITON_INTERPRET=1 runs Triton's interpreter instead (slow; small workloads).
"""
import argparse
import csv
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

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


def lcg_tensor(torch, seed, shape, dtype):
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
        return lcg_tensor(torch, e["lcg_seed"], e["shape"], e["dtype"])

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
    half = any(b["dtype"] in ("f16", "bf16") for b in plan["buffers"])
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


def time_launch(torch, mod, bufs, device, warmup, iters):
    if device != "cuda":
        t0 = time.perf_counter()
        mod.launch(bufs)
        return (time.perf_counter() - t0) * 1e3
    for _ in range(warmup):
        mod.launch(bufs)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        mod.launch(bufs)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def check_workload(torch, wdir, args):
    name = os.path.basename(os.path.normpath(wdir))
    row = {"workload": name}
    data = None
    dpath = os.path.join(wdir, "triton_data.json")
    if os.path.exists(dpath):
        data = json.load(open(dpath))
    want, inputs, outs = None, None, {}
    for policy in ("none", "greedy"):
        path = os.path.join(wdir, policy, "triton_kernels.py")
        if not os.path.exists(path):
            continue
        try:
            t0 = time.perf_counter()
            mod = load_module(path, "lpu_triton_%s_%s" % (name.replace("-", "_").replace(".", "_"), policy))
            plan = mod.BUFFER_PLAN
            if inputs is None:
                if data:
                    inputs, want = data_inputs(torch, wdir, data)
                else:
                    inputs = random_inputs(torch, plan, args.device)
            row["kernels_" + policy] = len(plan["kernels"])
            bufs = mod.allocate(inputs, args.device)
            mod.launch(bufs)  # compiles every kernel, then checks the values
            if args.device == "cuda":
                torch.cuda.synchronize()
            row["first_run_s_" + policy] = round(time.perf_counter() - t0, 2)
            got = {o: bufs[o] for o in plan["outputs"]}
            outs[policy] = got
            row["nonfinite_" + policy] = sum(int((~torch.isfinite(t.float())).sum()) for t in got.values())
            if want is not None:
                ok, err = compare(torch, got, want, tolerance(plan, data))
                row["ok_" + policy] = ok
                row["max_err_" + policy] = err
            row["ms_" + policy] = round(time_launch(torch, mod, bufs, args.device, args.warmup, args.iters), 4)
        except Exception as e:  # one workload's failure must not stop the others
            row["error_" + policy] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            if args.verbose:
                traceback.print_exc()
    if "none" in outs and "greedy" in outs:
        diff = 0.0
        for o, t in outs["none"].items():
            d = (t.float() - outs["greedy"][o].float()).abs()
            diff = max(diff, float(torch.nan_to_num(d, nan=float("inf")).max()) if d.numel() else 0.0)
        row["greedy_vs_none_max_diff"] = diff
    if "ms_none" in row and "ms_greedy" in row and row["ms_greedy"] > 0:
        row["speedup_greedy"] = round(row["ms_none"] / row["ms_greedy"], 3)
    row["reference"] = data["reference"] if data else "none (greedy vs none only)"
    row["ok"] = not any(k.startswith("error_") for k in row) and all(v for k, v in row.items() if k.startswith("ok_"))
    return row


def self_test_lcg(torch, wdir):
    """Regenerates every input stored with its seed and compares it exactly (runs on CPU)."""
    data = json.load(open(os.path.join(wdir, "triton_data.json")))
    raw = open(os.path.join(wdir, data["bin"]), "rb").read()
    n = 0
    for k, e in data["inputs"].items():
        if "offset" not in e or "lcg_seed" not in e:
            continue
        stored = torch.frombuffer(bytearray(raw[e["offset"]:e["offset"] + 4 * e["numel"]]), dtype=torch.float32)
        mine = lcg_tensor(torch, e["lcg_seed"], e["shape"], e["dtype"]).reshape(-1)
        if not torch.equal(stored, mine):
            bad = int((stored != mine).nonzero()[0])
            print("LCG mismatch for %s at %d: %r vs %r" % (k, bad, float(stored[bad]), float(mine[bad])))
            return 1
        n += 1
    if n == 0:
        print("no input is stored with its seed in " + wdir)
        return 1
    print("LCG reproduces %d stored inputs exactly" % n)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", help="directory of <workload>/{none,greedy}/triton_kernels.py (+ triton_data)")
    ap.add_argument("--only", default="", help="comma-separated workload directories to run (default: all)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="", help="also write the JSON lines here (and a .csv next to it)")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks")
    ap.add_argument("--self-test-lcg", action="store_true", help="check the LCG against ROOT's stored inputs")
    args = ap.parse_args()
    import torch
    if args.self_test_lcg:
        return self_test_lcg(torch, args.root)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device (use --device cpu with TRITON_INTERPRET=1 for the interpreter)", file=sys.stderr)
        return 2
    only = [w for w in args.only.split(",") if w]
    dirs = sorted(d for d in os.listdir(args.root) if os.path.isdir(os.path.join(args.root, d)))
    dirs = [d for d in dirs if not only or d in only]
    rows = []
    for d in dirs:
        row = check_workload(torch, os.path.join(args.root, d), args)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.device == "cuda":
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        keys = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        with open(os.path.splitext(args.out)[0] + ".csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    passed = sum(1 for r in rows if r["ok"])
    print("%d of %d workloads passed" % (passed, len(rows)), file=sys.stderr)
    return 0 if rows and passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
