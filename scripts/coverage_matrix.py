#!/usr/bin/python3
"""The model-coverage matrix (docs/coverage.md): every HuggingFace decoder family of
lpu_frontend.hf.FAMILIES (HyperAccel's list and the 2025-26 ones) x {logits graph, static-cache
decode graph, functional match against PyTorch fused and unfused, Triton on a GPU, built-in keys
equivalent within 5 % of latency}. Every cell is measured here or read from a recorded run; a
failing cell says why.

    scripts/coverage_matrix.py [--lpu build/lpu] [--graphs tests/fixtures/hf_coverage]
                               [--triton docs/gpu/h200-2026-12-04-coverage.jsonl] [--out docs/coverage.md]

Inputs:
  GRAPHS/FAMILY_{logits,decode}.json + sidecars and GRAPHS/summary.json: what
      `scripts/export_hf_fixtures.py OUT --coverage` exported on the accelerator machine (the
      export's own failures are the cells of the graphs that do not exist);
  --triton: scripts/triton_check.py rows of those graphs' modules on a GPU (workload names
      cov_FAMILY_KIND); without it the column says "not run";
  build/lpu: `lpu run GRAPH --functional --fusion none|greedy` (lpu-small) for the functional
      cells; `lpu run` of the HF decode graph and of a built-in `model: decoder` workload with the
      family's keys (lpu-small) for the last column, for the families the keys describe (the HF
      step exported from inputs_embeds, GRAPHS/FAMILY_embeds.json, as a built-in step starts
      from the embeddings).
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

from hf_positions import position_work_us

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Families in the order of the matrix: HyperAccel's stack's list, then the newer ones.
ORDER = ["opt", "llama", "llama3", "mistral", "qwen2", "gemma", "phi", "phi3", "falcon", "gpt2", "gptj", "gpt_neox",
         "gpt_bigcode", "starcoder2", "exaone4", "cohere", "internlm2", "olmo", "olmo2", "stablelm", "qwen3",
         "qwen2_moe", "qwen3_moe", "gemma2", "gemma3", "deepseek_v3", "mixtral", "granite", "glm", "smollm3", "mamba"]
NAMES = {"opt": "OPT", "llama": "Llama 1/2", "llama3": "Llama 3", "mistral": "Mistral", "qwen2": "Qwen2",
         "gemma": "Gemma", "phi": "Phi (1/2)", "phi3": "Phi-3", "falcon": "Falcon", "gpt2": "GPT-2", "gptj": "GPT-J",
         "gpt_neox": "GPT-NeoX", "gpt_bigcode": "StarCoder 1 (GPTBigCode)", "starcoder2": "StarCoder 2",
         "exaone4": "EXAONE 4", "cohere": "Cohere", "internlm2": "InternLM2", "olmo": "OLMo", "olmo2": "OLMo-2",
         "stablelm": "StableLM", "qwen3": "Qwen3", "qwen2_moe": "Qwen2-MoE", "qwen3_moe": "Qwen3-MoE",
         "gemma2": "Gemma-2", "gemma3": "Gemma-3", "deepseek_v3": "DeepSeek-V3", "mixtral": "Mixtral",
         "granite": "Granite", "glm": "GLM", "smollm3": "SmolLM3", "mamba": "Mamba"}

# The built-in decoder keys of the families they describe (the coverage sizes: d_model 32, FFN
# 64, 4 heads, vocab 128, 2 layers; lpu_frontend.hf.coverage_sizes), and what the keys leave out.
LLAMA = dict(norm="rmsnorm", mlp="swiglu", positions="rotary", bias=False)
BUILTIN = {
    "llama": (dict(LLAMA, kv_heads=2), ""),
    "llama3": (dict(LLAMA, kv_heads=2), "its rope scaling only changes the tables"),
    "mistral": (dict(LLAMA, kv_heads=2), ""),
    "phi3": (dict(LLAMA, kv_heads=2), "fused qkv and gate_up: the same bytes"),
    "qwen2": (dict(LLAMA, kv_heads=2, bias=True), "bias: true also gives o_proj a bias"),
    "qwen3": (dict(LLAMA, kv_heads=2, head_dim=8), "its per-head q/k norms are not modelled"),
    "granite": (dict(LLAMA, kv_heads=2), "its scalar multipliers are not modelled"),
    "smollm3": (dict(LLAMA, kv_heads=2), "its no-rope layers take rotary here"),
    "gemma": (dict(norm="rmsnorm", mlp="geglu", positions="rotary", bias=False, kv_heads=2, head_dim=8,
                   tied_embeddings=True), "its embedding scale is not modelled"),
    "gpt2": (dict(norm="layernorm", mlp="gelu", positions="learned", bias=True, tied_embeddings=True,
                  max_position=128), ""),
}


def run(cmd, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def first_error(text):
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()[:160]
    return text.strip().splitlines()[-1][:160] if text.strip() else "no output"


def functional(lpu, graph, fusion):
    code, out = run([lpu, "run", graph, "--functional", "--fusion", fusion])
    m = re.search(r"functional: max abs error (\S+),.*: (PASS|FAIL)", out)
    if m:
        return m.group(2) == "PASS", f"{m.group(2).lower()} {float(m.group(1)):.1e}"
    return False, f"exit {code}: {first_error(out)}"


def builtin_latency(lpu, family, graph):
    keys, note = BUILTIN[family]
    d = dict(model="decoder", layers=2, d_model=32, heads=4, ffn=64, vocab=128, max_position=128, phase="decode",
             seq_len=1, context=32, dtype="f32")
    d.update(keys)
    with tempfile.TemporaryDirectory() as tmp:
        w = os.path.join(tmp, f"cov_{family}.yaml")
        with open(w, "w") as f:
            for k, v in d.items():
                f.write(f"{k}: {str(v).lower() if isinstance(v, bool) else v}\n")
        res = []
        for what in (graph, w):
            out = os.path.join(tmp, "r.json")
            code, text = run([lpu, "run", what, "--json", out])
            if code != 0:
                return False, f"exit {code}: {first_error(text)}"
            res.append(json.load(open(out)))
    # The HF step's own position work (its rotary tables and mask, which a built-in step takes
    # as inputs) is left out, as in tests/hf_decode_compare.py.
    position_us, _ = position_work_us(graph, res[0])
    hf, built = res[0]["latency_us"] - position_us, res[1]["latency_us"]
    diff = (hf - built) / built
    cell = (f"{diff * 100:+.1f} % ({hf:.2f} vs {built:.2f} us, HF without its {position_us:.2f} us of position work)"
            + (f"; {note}" if note else ""))
    return abs(diff) <= 0.05, cell


def triton_cell(rows, family, kind):
    r = rows.get(f"cov_{family}_{kind}")
    if r is None:
        return None, "not run"
    errs = [r.get(f"error_{p}") for p in ("none", "greedy") if r.get(f"error_{p}")]
    if errs:
        return False, errs[0][:120]
    if not (r.get("ok_none") and r.get("ok_greedy")):
        return False, f"mismatch: none err {r.get('max_err_none')}, greedy err {r.get('max_err_greedy')}"
    return True, f"ok, greedy {r['ms_greedy']:.3f} ms ({r.get('speedup_greedy', 0):.1f}x none)"


def mark(ok, text):
    return ("yes" if ok else "no" if ok is False else "-") + (f": {text}" if text else "")


def family_row(args, family, exports, trows):
    row = {"family": family}
    for kind in ("logits", "decode"):
        exp = exports.get(f"coverage/{family}/{kind}")
        graph = os.path.join(args.graphs, f"{family}_{kind}.json")
        if exp is None or not exp.get("ok") or not os.path.exists(graph):
            why = (exp or {}).get("error", "not exported").splitlines()[0][:140]
            row[kind] = (False, why)
            row[kind + "_fn"] = (None, "no graph")
            row[kind + "_triton"] = (None, "no graph")
            continue
        row[kind] = (True, f"{exp.get('nodes', '?')} nodes")
        cells = [functional(args.lpu, graph, f) for f in ("none", "greedy")]
        row[kind + "_fn"] = (all(c[0] for c in cells), f"none {cells[0][1]}, greedy {cells[1][1]}")
        row[kind + "_triton"] = triton_cell(trows, family, kind)
    # The built-in step starts from the token embeddings: compared with the HF step exported from
    # inputs_embeds (no embedding gather), the same graph as the decode column otherwise.
    graph = os.path.join(args.graphs, f"{family}_embeds.json")
    if family not in BUILTIN:
        row["builtin"] = (None, "no built-in keys for its structure")
    elif not os.path.exists(graph):
        why = (exports.get(f"coverage/{family}/embeds") or {}).get("error", "no decode graph from inputs_embeds")
        row["builtin"] = (False, why.splitlines()[0][:140])
    else:
        row["builtin"] = builtin_latency(args.lpu, family, graph)
    return row


def render(rows, args, summary):
    out = ["# Model coverage: HuggingFace families through the workbench", "",
           "Generated by `scripts/coverage_matrix.py` (do not edit by hand). Graphs: "
           f"`{os.path.relpath(args.graphs, ROOT)}/`, exported by `scripts/export_hf_fixtures.py OUT --coverage` "
           f"on the accelerator machine ({summary.get('torch', '?')}, transformers {summary.get('transformers', '?')}, "
           f"{summary.get('date', '?')}): each family's small config (`lpu_frontend.hf.coverage_sizes`: d_model 32, "
           "FFN 64, vocab 128, 2 layers, random weights), eager attention, its logits for 8 input ids and one decode "
           "step against transformers' static KV cache (32 slots, position 5). Functional: `lpu run GRAPH "
           "--functional --fusion none|greedy` against PyTorch's outputs in the sidecar (lpu-small). Triton: "
           "`scripts/triton_check.py` of both modules on "
           + (f"the GPU (`{os.path.relpath(args.triton, ROOT)}`)" if args.triton else "a GPU (not run for this table)")
           + ". Built-in: `lpu run` of the HF decode step exported from `inputs_embeds` (a built-in step starts "
           "from the embeddings) and of `model: decoder` with the family's keys (context 32, lpu-small), latency "
           "within 5 % once the HF step's position work (kernels computing its rotary tables and mask from "
           "`cache_position`, which a built-in step takes as inputs) is left out; families whose structure the "
           "keys do not describe say so.", ""]
    cols = [("logits", "logits graph"), ("logits_fn", "logits functional"), ("logits_triton", "logits Triton"),
            ("decode", "decode graph"), ("decode_fn", "decode functional"), ("decode_triton", "decode Triton"),
            ("builtin", "built-in keys")]
    out.append("| family | " + " | ".join(c[1] for c in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for r in rows:
        out.append(f"| {NAMES.get(r['family'], r['family'])} (`{r['family']}`) | "
                   + " | ".join(mark(*r[c]).replace("|", "/") for c, _ in cols) + " |")
    n = len(rows)
    count = {c: sum(1 for r in rows if r[c][0]) for c, _ in cols}
    out += ["", "Totals (yes of " + str(n) + " families): " + ", ".join(f"{t} {count[c]}" for c, t in cols) + ".", ""]
    out += ["Every cell that says no for a graph is an export failure on the PyTorch side (transformers 5.17's "
            "static-cache wrapper with `torch.export`: OPT's data-dependent cache guard, Falcon's multi-query and "
            "DeepSeek-V3's latent caches that `index_copy_` cannot fill, Mixtral's wrapper, Mamba's state instead "
            "of a KV cache; InternLM2 exists only as remote code). Every graph that exported runs and matches "
            "PyTorch, fused and unfused, on the simulator and in Triton. The built-in keys miss 5 % where the "
            "family has parts the keys do not model (Qwen3's per-head q/k norms) or where the HF graph spends "
            "kernels differently (Phi-3's fused qkv/gate_up: fewer, larger kernels; GPT-2's graph gathers and "
            "adds its position embedding, which a built-in step takes as already added); DeepSeek-V3 and the mixtures are built-in presets "
            "(docs/workloads.md) but their decode steps do not export here.", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lpu", default=os.path.join(ROOT, "build", "lpu"))
    ap.add_argument("--graphs", default=os.path.join(ROOT, "tests", "fixtures", "hf_coverage"))
    ap.add_argument("--triton", default="")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "coverage.md"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    summary = json.load(open(os.path.join(args.graphs, "summary.json")))
    exports = {r["job"]: r for r in summary["results"]}
    trows = {}
    if args.triton:
        for line in open(args.triton):
            if line.strip():
                r = json.loads(line)
                trows[r["workload"]] = r
    families = [f for f in ORDER if any(j.startswith(f"coverage/{f}/") for j in exports)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(lambda f: family_row(args, f, exports, trows), families))
    with open(args.out, "w") as f:
        f.write(render(rows, args, summary))
    print(f"wrote {args.out}: {len(rows)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
