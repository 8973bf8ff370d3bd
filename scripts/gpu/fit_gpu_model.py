#!/usr/bin/env python3
"""Calibrates the serve layer's GPU step-cost model (workbench/serve/gpu_model.cpp) against a
measured prefill table (scripts/gpu/measure_prefill.py): the same formula, in Python, and a
search over the efficiencies and the per-kernel overhead that minimises the worst relative error
over the table's rows. Prints the fitted values (for configs/gpus/*.yaml) and every row's error.

usage: /usr/bin/python3 scripts/gpu/fit_gpu_model.py [TABLE.jsonl] [--variant eager] [--kinds prefill]
                                                      [--check CONFIG.yaml]
The fit needs scipy; --check evaluates a config file's values instead of fitting (PyYAML); both
are Debian's. On the H200 table the fit gives configs/gpus/h200.yaml's values. The C++ test
(tests/test_serve_gpu.cpp) is the judge; this script is the search.
"""
import argparse
import json
import sys

# The models the table measured, as the serve layer's ModelDims describes them.
MODELS = {
    "llama2-7b": dict(layers=32, d_model=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008, vocab=32000,
                      gated_mlp=True, rms_norm=True, rotary=True),
    "opt-1.3b": dict(layers=24, d_model=2048, heads=32, kv_heads=32, head_dim=64, ffn=8192, vocab=50272,
                     gated_mlp=False, rms_norm=False, rotary=False),
}

# The measured stack's elementwise kernels per layer (transformers 5.17 eager; see configs/gpus/h200.yaml).
ELEMENTWISE = dict(layer_norm=(1, 2), rms_norm=(8, 18), rotary=(5, 9), activation=(1, 2), gated_activation=(2, 5),
                   residual=(1, 3), kv_append=(1, 2))
BYTES = 2  # fp16 weights and activations


def soft(c, m, k):
    """A roofline with a rounded knee: max(c, m) as k grows; measured GEMMs near the knee are slower."""
    return (c**k + m**k) ** (1.0 / k)


def classes(m, seqs, cfg):
    """(compute s, memory s) per kernel class and the kernels launched, for one step."""
    L, d, h, kvh, hd, f, v = (m[k] for k in ("layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "vocab"))
    peak, bw = cfg["peak_tflops"] * 1e12 * cfg["devices"], cfg["hbm_bandwidth_gbps"] * 1e9 * cfg["devices"]
    tokens = sum(n for _, n in seqs)
    q, kv = h * hd, kvh * hd
    mlp_mats = 3 if m["gated_mlp"] else 2
    w = L * (d * q + 2 * d * kv + q * d + mlp_mats * d * f)
    act = L * tokens * (d + q + 2 * kv + q + d + d + (mlp_mats - 1) * f + f + d) * BYTES
    out = {"gemm": (2 * w * tokens / (peak * cfg["gemm_efficiency"]),
                    (w * BYTES + act) / (bw * cfg["bandwidth_efficiency"]))}
    a_c = a_m = 0.0
    for ctx, n in seqs:
        a_c += 4 * L * h * hd * n * (ctx + (n + 1) / 2) / (peak * cfg["attention_efficiency"])
        a_m += L * BYTES * (2 * kv * (ctx + n) + 2 * q * n) / (bw * cfg["bandwidth_efficiency"])
    out["attention"] = (a_c, a_m)
    e = cfg["elementwise"]
    parts = [("residual", 2, d), ("kv_append", 2, kv)]
    parts.append(("rms_norm" if m["rms_norm"] else "layer_norm", 2, d))
    parts.append(("gated_activation" if m["gated_mlp"] else "activation", 1, f))
    if m["rotary"]:
        parts += [("rotary", 1, q), ("rotary", 1, kv)]
    ew_bytes = sum(e[name][1] * times * width for name, times, width in parts) * L * tokens * BYTES
    # A cache held as one tensor per layer is copied whole when a step appends to it.
    ew_bytes += cfg["cache_copy_passes"] * L * 2 * kv * BYTES * sum(ctx for ctx, _ in seqs)
    out["elementwise"] = (0.0, ew_bytes / (bw * cfg["elementwise_efficiency"]))
    s = len(seqs)
    out["lm_head"] = (2 * d * v * s / (peak * cfg["gemm_efficiency"]),
                      v * d * BYTES / (bw * cfg["bandwidth_efficiency"]))
    kernels = cfg["kernels_per_step"] + L * (4 + mlp_mats + 1 + sum(e[name][0] * times for name, times, _ in parts))
    return out, kernels


def step_time(m, seqs, cfg):
    out, kernels = classes(m, seqs, cfg)
    k = cfg["roofline_sharpness"]
    return sum(soft(c, mm, k) for c, mm in out.values()) + kernels * cfg["kernel_overhead_us"] * 1e-6


def row_seqs(r):
    return [(r["context_before"], r["new_tokens"])] * r["batch"]


def errors(rows, cfg):
    out = []
    for r in rows:
        pred = step_time(MODELS[r["model"]], row_seqs(r), cfg) * 1e3
        out.append((pred / r["gpu_ms"] - 1, pred, r))
    return out


BASE = dict(peak_tflops=989.0, hbm_bandwidth_gbps=4800.0, devices=1, kernels_per_step=20, cache_copy_passes=2,
            elementwise={k: list(v) for k, v in ELEMENTWISE.items()})


FITTED = ("gemm_efficiency", "attention_efficiency", "bandwidth_efficiency", "elementwise_efficiency",
          "kernel_overhead_us", "roofline_sharpness")


def fit(rows):
    """The values of FITTED that minimise the worst relative error: Nelder-Mead on a smooth
    maximum (log-sum-exp) of the errors from a few starts, then rounded to three figures, as a
    config file states them."""
    import math

    from scipy.optimize import minimize

    def cfg_of(x):
        return dict(BASE, **dict(zip(FITTED, x)))

    def smooth_worst(x):
        if min(x) <= 0 or max(x[:4]) > 1 or x[5] < 1:
            return 10.0
        errs = [abs(e) for e, _, _ in errors(rows, cfg_of(x))]
        return math.log(sum(math.exp(60 * e) for e in errs)) / 60

    best = None
    starts = ([0.8, 0.27, 0.69, 0.45, 2.3, 2.7], [0.76, 0.45, 0.7, 0.45, 2.5, 2.0], [0.8, 0.4, 0.75, 0.4, 2.0, 3.0])
    for start in starts:
        res = minimize(smooth_worst, start, method="Nelder-Mead", options=dict(maxiter=6000, xatol=1e-5, fatol=1e-7))
        if best is None or res.fun < best.fun:
            best = res
    return cfg_of([float(f"{v:.3g}") for v in best.x])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table", nargs="?", default="docs/gpu/prefill-h200-2026-12-03.jsonl")
    ap.add_argument("--variant", default="eager")
    ap.add_argument("--kinds", default="prefill", help="row kinds fitted and shown (prefill, chunk, decode)")
    ap.add_argument("--check", help="a GPU config YAML: evaluate it instead of fitting")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    rows = [r for r in map(json.loads, open(args.table)) if r["variant"] == args.variant and r["kind"] in kinds]
    if args.check:
        import yaml

        cfg = dict(BASE, **yaml.safe_load(open(args.check)))
        cfg["elementwise"] = {k: [v["kernels"], v["passes"]] for k, v in cfg["elementwise"].items()}
    else:
        cfg = fit(rows)
        print(json.dumps({k: v for k, v in cfg.items() if k != "elementwise"}))
    errs = errors(rows, cfg)
    for e, pred, r in errs:
        print(f"{r['model']:<10} {r['kind']:<8} b={r['batch']:<3} ctx={r['context_before']:<5} new={r['new_tokens']:<5}"
              f" measured {r['gpu_ms']:8.3f} ms  model {pred:8.3f} ms  {100 * e:+6.1f}%")
    worst = max(errs, key=lambda x: abs(x[0]))
    print(f"worst {100 * worst[0]:+.1f}% over {len(errs)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
