"""lpu.profile.vidur (docs/vidur.md): Vidur-shaped mlp.csv and attention.csv of tiny-llama on a
small grid: Vidur's columns, deterministic statistics, times that grow with the tokens, the op
times adding up to the simulated step, and the script.

    LPU_BUILD_DIR=build PYTHONPATH=python:reports /usr/bin/python3 -m pytest tests/python_profile_test.py
"""
import csv
import os
import subprocess
import sys

import pytest

import lpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Vidur's own headers (microsoft/vidur: data/profiling/compute/a100/meta-llama/Llama-2-7b-hf/
# mlp.csv; attention.csv: the profiler's keys and the ops its predictor reads).
VIDUR_MLP_OPS = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
                 "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
VIDUR_MLP_KEYS = ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
                  "num_tensor_parallel_workers"]
VIDUR_ATTENTION_KEYS = ["n_embd", "n_q_head", "n_kv_head", "block_size", "num_tensor_parallel_workers",
                        "max_model_len", "batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill"]
STATS = ["min", "max", "mean", "median", "std"]


def read(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


def ms(row, op, stat="median"):
    return float(row["time_stats.%s.%s" % (op, stat)])


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    out = tmp_path_factory.mktemp("vidur")
    return lpu.profile.vidur("tiny-llama", arch="lpu-asic", num_tokens=[1, 32, 128], batch_sizes=[1, 4],
                             kv_cache_sizes=[16, 64], out_dir=str(out))


def test_mlp_columns_and_rows(profile):
    columns, rows = read(profile.mlp_path)
    assert columns == ["time_stats.%s.%s" % (op, s) for op in VIDUR_MLP_OPS for s in STATS] + VIDUR_MLP_KEYS
    assert [int(r["num_tokens"]) for r in rows] == [1, 32, 128]
    for r in rows:
        assert (r["n_head"], r["n_kv_head"], r["n_embd"], r["n_expanded_embd"], r["vocab_size"]) == \
            ("4", "2", "64", "96", "96")
        assert r["use_gated_mlp"] == "True" and r["num_tensor_parallel_workers"] == "1"
        assert r["time_stats.emb.median"] == ""  # the step graph starts after the embedding
        for op in VIDUR_MLP_OPS[1:]:
            # deterministic: every statistic is the one simulated time, std 0
            assert ms(r, op, "min") == ms(r, op, "max") == ms(r, op, "mean") == ms(r, op) > 0, op
            assert ms(r, op, "std") == 0.0


def test_times_grow_with_tokens(profile):
    _, rows = read(profile.mlp_path)
    for op in ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"):
        times = [ms(r, op) for r in rows]
        assert times == sorted(times) and times[0] < times[-1], (op, times)
    totals = [sum(ms(r, op) for op in VIDUR_MLP_OPS[1:]) for r in rows]
    assert totals[0] < totals[1] < totals[2], totals
    _, rows = read(profile.attention_path)
    prefill = {(int(r["prefill_chunk_size"]), int(r["kv_cache_size"])): ms(r, "attn_prefill")
               for r in rows if r["is_prefill"] == "True"}
    assert prefill[(1, 0)] < prefill[(32, 0)] < prefill[(128, 0)], prefill
    assert prefill[(128, 0)] < prefill[(128, 64)], prefill  # a cached prefix costs more


def test_attention_columns_and_rows(profile):
    columns, rows = read(profile.attention_path)
    assert columns == ["time_stats.%s.%s" % (op, s) for op in ("attn_kv_cache_save", "attn_prefill", "attn_decode")
                       for s in STATS] + VIDUR_ATTENTION_KEYS + ["attention_backend"]
    prefill = [r for r in rows if r["is_prefill"] == "True"]
    decode = [r for r in rows if r["is_prefill"] == "False"]
    # prefill: batch 1, chunks x ([0] + caches); decode: batches x caches, chunk 0 (Vidur's is_decode)
    assert sorted((int(r["prefill_chunk_size"]), int(r["kv_cache_size"])) for r in prefill) == \
        [(n, c) for n in (1, 32, 128) for c in (0, 16, 64)]
    assert {r["batch_size"] for r in prefill} == {"1"}
    assert sorted((int(r["batch_size"]), int(r["kv_cache_size"])) for r in decode) == [(1, 16), (1, 64), (4, 16), (4, 64)]
    assert {r["prefill_chunk_size"] for r in decode} == {"0"}
    for r in prefill:
        assert ms(r, "attn_prefill") > 0 and r["time_stats.attn_decode.median"] == ""
    for r in decode:
        assert ms(r, "attn_decode") > 0 and r["time_stats.attn_prefill.median"] == ""
        # The new K/V rows are written by their projection (or rope) into the step's output: the
        # split into heads is a reshape, not a copy, so no kernel saves them apart.
        assert ms(r, "attn_kv_cache_save") == 0
    assert {(r["n_embd"], r["n_q_head"], r["n_kv_head"], r["block_size"], r["max_model_len"]) for r in rows} == \
        {("64", "4", "2", "16", "256")}


def test_op_times_add_up_to_the_step():
    """Every kernel's wall-clock share goes to exactly one place: Vidur's ops plus what is outside
    the layer (final norm, LM head) add up to the simulated step's latency."""
    w = {"model": "tiny-llama", "layers": 1, "phase": "decode", "context": 16, "batch": 2}
    run = lpu.run(w, arch="lpu-asic")
    unfused = lpu.run(w, arch="lpu-asic", fusion="none")
    times = lpu.profile.op_times_ms(run, unfused)
    assert sum(times.values()) == pytest.approx(run["latency_us"] / 1e3, rel=1e-9)
    assert sum(lpu.profile.kernel_wall_cycles(run)) == run["cycles"]
    assert set(times) == {"outside_layers", "input_layernorm", "attn_pre_proj", "attn_rope", "attn", "attn_post_proj",
                          "add", "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj"}


def test_unknown_nodes_and_models_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no Vidur op for the decoder's node 'l0.mystery'"):
        lpu.profile.node_op("l0.mystery")
    with pytest.raises(ValueError, match="dense decoders only"):
        lpu.profile.vidur("tiny-moe", num_tokens=[1], batch_sizes=[1], kv_cache_sizes=[8], out_dir=str(tmp_path))
    with pytest.raises(TypeError, match="num_tokens"):
        lpu.profile.vidur("tiny-llama", num_tokens=[1.5], out_dir=str(tmp_path))
    with pytest.raises(lpu.InputError):
        lpu.profile.vidur("no-such-model", num_tokens=[1], out_dir=str(tmp_path))


def test_script(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "vidur_profile.py"), "tiny-llama",
                        "--num-tokens", "1,4", "--batch-sizes", "2", "--kv-cache-sizes", "8", "--vocab-size", "128",
                        "-o", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    _, rows = read(os.path.join(str(tmp_path), "mlp.csv"))
    assert [r["num_tokens"] for r in rows] == ["1", "4"] and {r["vocab_size"] for r in rows} == {"128"}
    _, rows = read(os.path.join(str(tmp_path), "attention.csv"))
    assert len(rows) == 2 * 2 + 1
