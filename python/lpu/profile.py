"""Profile tables other tools read, with the costs the simulator produced (docs/vidur.md).

    import lpu
    p = lpu.profile.vidur("llama2-7b", arch="lpu-asic", num_tokens=[1, 16, 128],
                          batch_sizes=[1, 8], kv_cache_sizes=[512, 2048], out_dir="out/vidur")
    p.mlp_path, p.attention_path            # OUT/mlp.csv, OUT/attention.csv, as Vidur's profilers write

`vidur` writes Vidur's compute profiles (microsoft/vidur, data/profiling/compute/DEVICE/MODEL/):
`mlp.csv` (a row per token count: the per-layer ops outside attention) and `attention.csv` (a row
per prefill chunk and per decode batch against a KV cache), same columns, same op names, times in
milliseconds as Vidur's. Each row is one `lpu.run` of the decoder at `layers: 1`; its kernels are
mapped to Vidur's ops by the graph nodes they compute (NODE_OPS). The simulator is
deterministic, so min = max = mean = median and std = 0.
"""
import csv
import os
import re

STATS = ("min", "max", "mean", "median", "std")

# mlp.csv's ops, in the order Vidur's profiler writes them (data/profiling/compute/a100/
# meta-llama/Llama-2-7b-hf/mlp.csv), then its shape columns.
MLP_OPS = ("emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
           "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")
MLP_TP_OPS = ("attn_post_proj_all_reduce", "mlp_down_proj_all_reduce")  # only with tp > 1 (extra columns)
MLP_KEYS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
            "num_tensor_parallel_workers")
# attention.csv: the ops Vidur's predictor reads (vidur/execution_time_predictor/
# sklearn_execution_time_predictor.py), then the keys its attention profiler returns.
ATTENTION_OPS = ("attn_kv_cache_save", "attn_prefill", "attn_decode")
ATTENTION_KEYS = ("n_embd", "n_q_head", "n_kv_head", "block_size", "num_tensor_parallel_workers", "max_model_len",
                  "batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill", "attention_backend")

# A graph node of the built-in decoder (its name without the layer prefix `lN.`) -> Vidur's op.
# First match wins. "attn" is the attention core (attn_prefill or attn_decode, by the row);
# None: outside the layer (final norm, LM head), not in Vidur's per-layer tables.
NODE_OPS = (
    (r"o_proj_allreduce", "attn_post_proj_all_reduce"),
    (r"(down_proj|fc2)_allreduce", "mlp_down_proj_all_reduce"),
    (r"attn_norm", "input_layernorm"),
    (r"ffn_norm", "post_attention_layernorm"),
    (r"(q|k|v|qkv)_proj", "attn_pre_proj"),
    (r"[qk]_rope", "attn_rope"),
    (r"(k|v)_heads", "attn_kv_cache_save"),
    (r"q_scaled|scores|masked|alibi|probs|attn_new$|attn_cache$|attn_unnormalised$|attn$", "attn"),
    (r"o_proj", "attn_post_proj"),
    (r"(attn|ffn)_residual$", "add"),
    (r"gate_proj|up_proj|fc1", "mlp_up_proj"),
    (r"gate_act|glu$|act", "mlp_act"),
    (r"down_proj|fc2", "mlp_down_proj"),
)
OUTSIDE = re.compile(r"^(final_norm|lm_head|embed)")
LAYER = re.compile(r"^l\d+\.")
OUTSIDE_OP = "outside_layers"  # op_times_ms's key for the nodes outside the layer


def node_op(node):
    """Vidur's op for a node of the built-in decoder, None outside the layers; ValueError for a
    node no rule knows (a new node in the builder must be mapped here, not guessed)."""
    if OUTSIDE.match(node):
        return None
    name = LAYER.sub("", node)
    for pattern, op in NODE_OPS:
        if re.match(pattern, name):
            return op
    raise ValueError("lpu.profile: no Vidur op for the decoder's node '%s' (map it in NODE_OPS)" % node)


def kernel_wall_cycles(run):
    """Each kernel's share of the step's wall clock: kernels overlap (the ISU issues the next
    kernel's loads under the last one's compute), so the own cycles of all kernels add up to more
    than the step. A kernel is charged from the previous kernel's end (or its own start, after an
    idle gap) to its own end, in order of end cycle: the shares add up to the step's cycles."""
    order = sorted(range(len(run["kernels"])), key=lambda i: run["kernels"][i]["end_cycle"])
    shares, last = {}, 0
    for i in order:
        k = run["kernels"][i]
        shares[i] = max(0, k["end_cycle"] - max(last, k["start_cycle"]))
        last = max(last, k["end_cycle"])
    return [shares[i] for i in range(len(run["kernels"]))]


def op_times_ms(run, unfused=None):
    """{Vidur op: ms} of one step (OUTSIDE_OP: the final norm and the LM head; all of them add up
    to the step's latency). A kernel's wall-clock share goes to the ops of its nodes; a fused
    kernel covering several ops is split in proportion to those nodes' own cycles in `unfused`
    (the same workload at fusion none, one kernel a node), evenly without it."""
    ms_per_cycle = run["latency_us"] / run["cycles"] / 1e3 if run["cycles"] else 0.0
    weight = {}
    for k in (unfused or {}).get("kernels", []):
        for n in k["nodes"]:
            weight[n] = weight.get(n, 0.0) + k["cycles"] / len(k["nodes"])
    times = {}
    for k, share in zip(run["kernels"], kernel_wall_cycles(run)):
        nodes = list(dict.fromkeys(k["nodes"]))  # a node split in parts appears more than once
        w = [weight.get(n, 1.0 if not weight else 0.0) for n in nodes]
        if sum(w) <= 0:
            w = [1.0] * len(nodes)
        for n, wn in zip(nodes, w):
            op = node_op(n) or OUTSIDE_OP
            times[op] = times.get(op, 0.0) + share * wn / sum(w) * ms_per_cycle
    return times


def _stats(prefix, value):
    """Vidur's five statistics of one op; the simulator is deterministic, so every sample is the
    same: min = max = mean = median = value, std = 0. None (not measured) leaves them empty."""
    if value is None:
        return {"time_stats.%s.%s" % (prefix, s): "" for s in STATS}
    return {"time_stats.%s.%s" % (prefix, s): (0.0 if s == "std" else value) for s in STATS}


class VidurProfile:
    """What `vidur` wrote: rows (dicts in column order) and the files' paths."""

    def __init__(self, mlp_rows, attention_rows, mlp_path, attention_path, meta):
        self.mlp_rows, self.attention_rows = mlp_rows, attention_rows
        self.mlp_path, self.attention_path, self.meta = mlp_path, attention_path, meta

    def frames(self):
        """(mlp, attention) as pandas DataFrames read back from the files, as Vidur reads them."""
        import pandas as pd
        return pd.read_csv(self.mlp_path), pd.read_csv(self.attention_path)

    def __repr__(self):
        return "VidurProfile(%d mlp rows, %d attention rows: %s)" % (
            len(self.mlp_rows), len(self.attention_rows), os.path.dirname(self.mlp_path))


def _base_workload(model, dtype):
    if isinstance(model, str):
        w = {"model": model}
    elif isinstance(model, dict):
        w = dict(model)
    else:
        raise TypeError("model: expected a built-in decoder's name or a dict of workload keys, got %s"
                        % type(model).__name__)
    w["layers"] = 1
    if dtype is not None:
        w["dtype"] = dtype
    return w


def _int_list(name, values, minimum):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError("%s: expected a list of ints" % name)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("%s: expected ints, got %s" % (name, type(v).__name__))
        if v < minimum:
            raise ValueError("%s: %d is below %d" % (name, v, minimum))
        out.append(v)
    return out


def _write(path, rows, columns):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow(r)


def vidur(model, *, arch=None, tp=1, num_tokens=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
          batch_sizes=(1, 2, 4, 8, 16, 32), kv_cache_sizes=(128, 256, 512, 1024, 2048), out_dir,
          fusion="greedy", dtype=None, overrides=None, block_size=16, max_model_len=None, vocab_size=None):
    """Writes OUT_DIR/mlp.csv and OUT_DIR/attention.csv for a built-in decoder (a name such as
    "llama2-7b", or a dict of workload keys, `model: decoder` ...), costs simulated on `arch`.

    mlp.csv: a row per `num_tokens` n (a prefill of n tokens, batch 1, no cache).
    attention.csv: prefill rows (batch 1, chunk n of `num_tokens`, cached c of [0] +
    `kv_cache_sizes`, n + c <= max_model_len) and decode rows (batch b of `batch_sizes`, one new
    token each against c of `kv_cache_sizes`).
    dtype: the workload's (Vidur profiles f16; None keeps the preset's). block_size: written for
    Vidur's filter only (the simulated KV cache is contiguous). max_model_len: default the model's
    max_position. vocab_size: the column's value (Vidur's Llama-2 config says 32768, the padded
    table; the LM head is not in these tables, so it changes no time).
    Returns a VidurProfile."""
    import lpu

    num_tokens = _int_list("num_tokens", num_tokens, 1)
    batch_sizes = _int_list("batch_sizes", batch_sizes, 1)
    kv_cache_sizes = _int_list("kv_cache_sizes", kv_cache_sizes, 1)
    base = _base_workload(model, dtype)
    runs = {}

    def simulate(**keys):
        w = dict(base, **keys)
        key = tuple(sorted(w.items()))
        if key not in runs:
            tp_arg = tp if tp and tp > 1 else None
            run = lpu.run(w, arch=arch, overrides=overrides, fusion=fusion, tp=tp_arg)
            unfused = run if fusion == "none" else lpu.run(w, arch=arch, overrides=overrides, fusion="none", tp=tp_arg)
            runs[key] = (run, op_times_ms(run, unfused))
        return runs[key]

    probe, _ = simulate(phase="prefill", seq_len=num_tokens[0] if num_tokens else 1, context=0, batch=1)
    d = probe["workload"]["decoder"]
    if d.get("experts") or d.get("attention", "mha") == "mla":
        raise ValueError("lpu.profile.vidur: dense decoders only (Vidur's tables have no experts or latent attention)")
    max_len = max_model_len if max_model_len is not None else d["max_position"]
    tp_n = tp or 1
    shape = {"n_head": d["heads"], "n_kv_head": d["kv_heads"], "n_embd": d["d_model"], "n_expanded_embd": d["ffn"],
             "vocab_size": vocab_size if vocab_size is not None else d["vocab"],
             "use_gated_mlp": d["mlp"] in ("swiglu", "geglu"), "num_tensor_parallel_workers": tp_n}

    mlp_rows = []
    for n in num_tokens:
        _, t = simulate(phase="prefill", seq_len=n, context=0, batch=1)
        row = {}
        for op in MLP_OPS:
            row.update(_stats(op, None if op == "emb" else t.get(op, 0.0)))
        if tp_n > 1:
            for op in MLP_TP_OPS:
                row.update(_stats(op, t.get(op, 0.0)))
        row.update({k: shape[k] for k in MLP_KEYS if k != "num_tokens"}, num_tokens=n)
        mlp_rows.append(row)

    attention_rows = []
    common = {"n_embd": d["d_model"], "n_q_head": d["heads"], "n_kv_head": d["kv_heads"], "block_size": block_size,
              "num_tensor_parallel_workers": tp_n, "max_model_len": max_len, "attention_backend": "lpu-sim"}

    def attention_row(t, prefill, batch, chunk, cached):
        row = {}
        row.update(_stats("attn_kv_cache_save", t.get("attn_kv_cache_save", 0.0)))
        row.update(_stats("attn_prefill", t.get("attn", 0.0) if prefill else None))
        row.update(_stats("attn_decode", None if prefill else t.get("attn", 0.0)))
        row.update(common, batch_size=batch, prefill_chunk_size=chunk, kv_cache_size=cached, is_prefill=prefill)
        return row

    for n in num_tokens:
        for c in [0] + kv_cache_sizes:
            if n + c > max_len:
                continue
            # A chunk against a cached prefix is the decoder's step of n new tokens at context c
            # (phase decode takes seq_len > 1: causal within the chunk); without a prefix, a prefill.
            keys = dict(phase="prefill", seq_len=n, context=0) if c == 0 else dict(phase="decode", seq_len=n, context=c)
            _, t = simulate(batch=1, **keys)
            attention_rows.append(attention_row(t, True, 1, n, c))
    for b in batch_sizes:
        for c in kv_cache_sizes:
            if c + 1 > max_len:
                continue
            _, t = simulate(phase="decode", seq_len=1, context=c, batch=b)
            attention_rows.append(attention_row(t, False, b, 0, c))

    os.makedirs(out_dir, exist_ok=True)
    mlp_columns = ["time_stats.%s.%s" % (op, s) for op in MLP_OPS + (MLP_TP_OPS if tp_n > 1 else ()) for s in STATS]
    mlp_columns += list(MLP_KEYS)
    attention_columns = ["time_stats.%s.%s" % (op, s) for op in ATTENTION_OPS for s in STATS] + list(ATTENTION_KEYS)
    mlp_path, attention_path = os.path.join(out_dir, "mlp.csv"), os.path.join(out_dir, "attention.csv")
    _write(mlp_path, mlp_rows, mlp_columns)
    _write(attention_path, attention_rows, attention_columns)
    meta = {"model": model if isinstance(model, str) else dict(model), "arch": probe["arch"].get("name", arch),
            "fusion": fusion, "dtype": probe["workload"]["dtype"], "tp": tp_n, "runs": len(runs) * (1 if fusion == "none" else 2)}
    return VidurProfile(mlp_rows, attention_rows, mlp_path, attention_path, meta)
