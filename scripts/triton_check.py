#!/usr/bin/env python3
"""Run lpu's emitted Triton modules on a GPU next to PyTorch eager and Inductor on the same graph.

Needs only torch and triton (no lpu binary): everything comes from a directory that
scripts/triton_emit.sh writes on a machine with build/lpu:

    ROOT/<workload>/none/triton_kernels.py      lpu compile W --fusion none   --emit triton
    ROOT/<workload>/greedy/triton_kernels.py    lpu compile W --fusion greedy --emit triton
    ROOT/<workload>/torch_graph.py              lpu compile W --emit torch    (optional)
    ROOT/<workload>/triton_data.{json,bin}      lpu compile W --emit triton-data  (optional)

With triton_data the inputs are the ones lpu's reference used (stored, or regenerated from the
seed of lpu's LCG, ref/tensor.cpp) and every result is compared with the reference's outputs;
without it the inputs are random (seeded) and the results are compared with PyTorch eager's
(torch_graph.py: the core graph as eager torch calls), or greedy with none only.

For each workload: eager (torch_graph.py's forward), lpu none, lpu greedy and Inductor
(torch.compile(forward), default mode: no CUDA graphs, like the others): first-call seconds
(compilation), max error and pass, non-finite outputs, median milliseconds of one call
(triton.testing.do_bench, L2 flushed before each call; or --timer events), GPU kernels per call (torch.profiler: kernels plus memcpy/memset), and for Inductor the
Triton kernels it generated (torch._inductor.metrics).

    PYTHONPATH=python python3 scripts/triton_check.py ROOT [--only a,b] [--timer do_bench|events] [--out results.jsonl]
                                         [--no-inductor] [--no-count-kernels]

Prints one JSON line per workload (and writes them to --out, plus a CSV next to it). Exit 0 when
every check passed. `--device cpu` with TRITON_INTERPRET=1 runs Triton's interpreter instead
(slow; small workloads). Its loaders and tolerances are lpu_workbench.triton_data (python/: put it on
PYTHONPATH, as scripts/triton_gpu.sh does, or install the package: docs/python.md).
"""
import argparse
import csv
import json
import os
import statistics
import sys
import time
import traceback

from lpu_workbench.triton_data import compare, data_inputs, lcg_tensor, load_module, random_inputs, tolerance


def time_fn(torch, fn, device, warmup, iters, timer="events"):
    """Median milliseconds of fn(): triton.testing.do_bench (L2 flushed before each call, `warmup` and
    `iters` read as its warm-up and measuring milliseconds) or CUDA events around `iters` calls after
    `warmup` calls; one wall-clock call off CUDA."""
    if device == "cuda" and timer == "do_bench":
        import triton.testing
        return float(triton.testing.do_bench(fn, warmup=warmup, rep=iters, return_mode="median"))
    if device != "cuda":
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def gpu_kernels(torch, fn, device):
    """GPU kernels (and memcpy/memset) one fn() call launches, counted by torch.profiler; None off CUDA."""
    if device != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def _run_policy(torch, row, key, fn, outs_fn, want, tol, args):
    """First call (compiles), values against `want`, then the timing; fills row[*_key]."""
    t0 = time.perf_counter()
    fn()
    if args.device == "cuda":
        torch.cuda.synchronize()
    row["first_run_s_" + key] = round(time.perf_counter() - t0, 2)
    got = outs_fn()
    row["nonfinite_" + key] = sum(int((~torch.isfinite(t.float())).sum()) for t in got.values())
    if want is not None:
        ok, err = compare(torch, got, want, tol)
        row["ok_" + key] = ok
        row["max_err_" + key] = err
    if args.timer == "do_bench":
        row["ms_" + key] = round(time_fn(torch, fn, args.device, args.bench_warmup_ms, args.bench_ms, "do_bench"), 4)
    else:
        row["ms_" + key] = round(time_fn(torch, fn, args.device, args.warmup, args.iters), 4)
    if args.count_kernels:
        try:
            row["gpu_kernels_" + key] = gpu_kernels(torch, fn, args.device)
        except Exception as e:  # the profiler is a nicety: never lose the row for it
            row["gpu_kernels_" + key] = "%s: %s" % (type(e).__name__, str(e)[:100])
    return got


def check_workload(torch, wdir, args):
    """One workload: PyTorch eager (torch_graph.py, when emitted), lpu's Triton modules none and
    greedy, and Inductor (torch.compile of the same forward), each checked and timed."""
    name = os.path.basename(os.path.normpath(wdir))
    ident = name.replace("-", "_").replace(".", "_")
    row = {"workload": name, "timer": args.timer}
    data = None
    dpath = os.path.join(wdir, "triton_data.json")
    if os.path.exists(dpath):
        data = json.load(open(dpath))
    mods = {}
    for policy in ("none", "greedy"):
        path = os.path.join(wdir, policy, "triton_kernels.py")
        if os.path.exists(path):
            try:
                mods[policy] = load_module(path, "lpu_triton_%s_%s" % (ident, policy))
            except Exception as e:
                row["error_" + policy] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
    graph = None
    gpath = os.path.join(wdir, "torch_graph.py")
    if os.path.exists(gpath):
        graph = load_module(gpath, "lpu_torch_graph_%s" % ident)
    if not mods:
        row["ok"] = False
        return row
    plan = next(iter(mods.values())).BUFFER_PLAN
    want = None
    if data:
        inputs, want = data_inputs(torch, wdir, data)
        reference = data["reference"]
    else:
        inputs = random_inputs(torch, plan, args.device)
        reference = "none (greedy vs none only)"
    tol = tolerance(plan, data)
    outs = {}
    eager_args = None
    if graph is not None:  # PyTorch eager on the same inputs: the reference where lpu gave none
        try:
            eager_args = graph.prepare(inputs, args.device)
            box = {}

            def eager():
                box["r"] = graph.forward(*eager_args)

            got = _run_policy(torch, row, "eager", eager, lambda: dict(zip(graph.OUTPUTS, box["r"])), want, tol, args)
            outs["eager"] = got
            if want is None:
                want = {k: v.detach().float().cpu() for k, v in got.items()}
                reference = "PyTorch eager (this run)"
                tol = tolerance(plan, {"reference": "PyTorch eager"})
        except Exception as e:
            row["error_eager"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            if args.verbose:
                traceback.print_exc()
    for policy, mod in mods.items():
        try:
            p = mod.BUFFER_PLAN
            row["kernels_" + policy] = len(p["kernels"])
            bufs = mod.allocate(inputs, args.device)
            outs[policy] = _run_policy(torch, row, policy, lambda: mod.launch(bufs),
                                       lambda: {o: bufs[o] for o in p["outputs"]}, want, tol, args)
        except Exception as e:  # one workload's failure must not stop the others
            row["error_" + policy] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            if args.verbose:
                traceback.print_exc()
    if graph is not None and eager_args is not None and args.inductor:
        try:
            import torch._dynamo
            from torch._inductor import metrics
            torch._dynamo.reset()
            metrics.reset()
            if args.inductor_emulate_casts:  # round every fused intermediate to its dtype, as eager does
                torch._inductor.config.emulate_precision_casts = True
                row["inductor_emulate_precision_casts"] = True
            compiled = torch.compile(graph.forward)
            box = {}

            def inductor():
                box["r"] = compiled(*eager_args)

            outs["inductor"] = _run_policy(torch, row, "inductor", inductor,
                                           lambda: dict(zip(graph.OUTPUTS, box["r"])), want, tol, args)
            row["kernels_inductor"] = metrics.generated_kernel_count  # Triton kernels Inductor generated
        except Exception as e:
            row["error_inductor"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
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
    if "ms_none" in row and "ms_inductor" in row and row["ms_inductor"] > 0:
        row["speedup_inductor"] = round(row["ms_none"] / row["ms_inductor"], 3)
    row["reference"] = reference
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
        mine = lcg_tensor(torch, e["lcg_seed"], e["shape"], e["dtype"], e.get("lcg_scale", 1.0)).reshape(-1)
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
    ap.add_argument("--timer", choices=["do_bench", "events"], default="do_bench",
                    help="do_bench: triton.testing.do_bench, median, L2 flushed before each call (default); "
                         "events: CUDA events around --iters calls after --warmup calls")
    ap.add_argument("--bench-ms", type=int, default=100, help="do_bench: milliseconds of measured calls")
    ap.add_argument("--bench-warmup-ms", type=int, default=25, help="do_bench: milliseconds of warm-up calls")
    ap.add_argument("--iters", type=int, default=50, help="events: timed calls")
    ap.add_argument("--warmup", type=int, default=10, help="events: untimed calls first")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="", help="also write the JSON lines here (and a .csv next to it)")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks")
    ap.add_argument("--no-inductor", dest="inductor", action="store_false",
                    help="skip torch.compile of torch_graph.py (Inductor)")
    ap.add_argument("--inductor-emulate-casts", action="store_true",
                    help="torch._inductor.config.emulate_precision_casts: fused f16 intermediates rounded like eager's")
    ap.add_argument("--no-count-kernels", dest="count_kernels", action="store_false",
                    help="skip counting each call's GPU kernels with torch.profiler")
    ap.add_argument("--self-test-lcg", action="store_true", help="check the LCG against ROOT's stored inputs")
    args = ap.parse_args()
    import torch
    if args.self_test_lcg:
        return self_test_lcg(torch, args.root)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device (use --device cpu with TRITON_INTERPRET=1 for the interpreter)", file=sys.stderr)
        return 2
    only = [w for w in args.only.split(",") if w]
    dirs = sorted(d for d in os.listdir(args.root)  # "_zoo": graphs, not a workload
                  if os.path.isdir(os.path.join(args.root, d)) and not d.startswith("_"))
    dirs = [d for d in dirs if not only or d in only]
    rows = []
    sink = open(args.out, "w") if args.out else None  # a row as soon as it is known: a killed run keeps them
    for d in dirs:
        row = check_workload(torch, os.path.join(args.root, d), args)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    if sink:
        sink.close()
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
