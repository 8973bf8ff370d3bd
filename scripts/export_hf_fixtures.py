#!/usr/bin/env python3
"""Exports the HuggingFace fixtures (tests/fixtures/hf/) on a machine with torch >= 2.1 and
transformers >= 5 (the accelerator machine: torch 2.11, transformers 5.17).

    PYTHONPATH=python python3 scripts/export_hf_fixtures.py OUT_DIR [--jobs N] [--only REGEX] [--big] [--coverage]

Jobs (each in its own process, N at a time; one failing job loses nothing else):
  fixture/FAMILY/ATTN   every family of lpu_frontend.hf.FAMILIES x attention eager / sdpa:
                        forward(input_ids [1, 8]) -> logits, random weights (seed 0)
  decode/FAMILY/...     one decode step with a static KV cache (lpu_frontend.hf.export_decode):
                        `ids` takes input_ids, `embeds` inputs_embeds; `tiny` has the shape of the
                        built-in tiny-llama (tests compare the two)
  dynamo/break          torch.compile of a module with a graph break, with its manifest
  coverage/FAMILY/KIND  (--coverage, instead of the above) every decoder family's logits graph and
                        decode step (eager attention) for docs/coverage.md, into OUT_DIR/FAMILY_KIND.json;
                        KIND embeds: the decode step from inputs_embeds (hf.COVERAGE_EMBEDS)
  big/llama2-7b         (--big) the decode step at LLaMA-2-7B shape, fp16, on the GPU, JSON only
                        (the sidecar is left empty: a timing-only graph): 49 s on the H200 machine
                        (2026-12-01), committed as tests/fixtures/hf_large/
Writes OUT_DIR/<job files>, OUT_DIR/summary.json (per job: ok, seconds, ops, error, traceback)
and prints one line per job.
"""

import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))

TINY_LLAMA = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, rms_norm_eps=1e-6, tie_word_embeddings=False)
LLAMA2_7B = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
                 rms_norm_eps=1e-6, tie_word_embeddings=False)


def jobs(big: bool, coverage: bool = False):
    from lpu_frontend import hf

    if coverage:  # every decoder family: its logits graph and its static-cache decode step
        out = [f"coverage/{f}/{k}" for f in hf.FAMILIES if f not in hf.ENCODERS for k in ("logits", "decode")]
        return out + [f"coverage/{f}/embeds" for f in sorted(hf.COVERAGE_EMBEDS)]
    out = [f"fixture/{f}/{a}" for f in hf.FAMILIES if f not in hf.COVERAGE_ONLY for a in ("eager", "sdpa")]
    out += ["decode/llama/eager/ids", "decode/llama/sdpa/ids", "decode/llama/eager/embeds-tiny",
            "decode/llama/eager/ids-tiny", "decode/gemma3/eager/ids", "dynamo/break"]
    if big:
        out.append("big/llama2-7b")
    return out



def run_dynamo(out_dir: str):
    import torch

    import lpu_frontend

    class Branchy(torch.nn.Module):
        """graph 0: gelu(a(x)) and its sum; .item() breaks the graph; graph 1: ln(b(y) + x)."""

        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(32, 32)
            self.b = torch.nn.Linear(32, 32)
            self.ln = torch.nn.LayerNorm(32)

        def forward(self, x):
            y = torch.nn.functional.gelu(self.a(x))
            if y.sum().item() > 0:
                return self.ln(self.b(y) + x)
            return self.ln(self.b(-y) + x)

    torch.manual_seed(0)
    model = Branchy().eval()
    x = torch.randn(4, 32)
    folder = os.path.join(out_dir, "dynamo_break")
    os.makedirs(folder, exist_ok=True)
    rec = lpu_frontend.ManifestRecorder(folder, model=model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=rec.backend)
    with torch.no_grad():
        rec.run(compiled, x)
    path = rec.write()
    return {"files": sorted(os.listdir(folder)), "manifest": json.load(open(path))}


def dump_decode_graph(model, path):
    """Diagnostics for a failed decode export: the decomposed ATen graph as Python code."""
    import torch

    from lpu_frontend import hf

    try:
        module = hf.decode_module(model, 32)
        with torch.no_grad():
            ep = torch.export.export(module, (), {"input_ids": torch.tensor([[5]]), "cache_position": torch.tensor([5])})
            ep = ep.run_decompositions()
        text = str(ep.graph_signature) + "\n" + ep.graph_module.code
    except Exception:  # noqa: BLE001
        text = traceback.format_exc()
    with open(path, "w") as f:
        f.write(text)


def run_job(job: str, out_dir: str) -> dict:
    import torch

    from lpu_frontend import hf

    parts = job.split("/")
    if parts[0] == "fixture":
        family, attn = parts[1], parts[2]
        path = os.path.join(out_dir, f"hf_{family}_{attn}.json")
        tried = []
        for experts in (hf.EXPERTS if family in hf.MOE else (None,)):
            try:
                model = hf.build(family, attn=attn, experts=experts)
                e = hf.export_logits(model, path, encoder=family in hf.ENCODERS)
                return {"ops": e.ops, "nodes": e.nodes, "experts": experts, "tried": tried}
            except Exception as ex:  # noqa: BLE001 - next expert implementation
                tried.append(f"{experts}: {type(ex).__name__}: {str(ex)[:400]}")
                if experts is None or experts == hf.EXPERTS[-1]:
                    raise
    if parts[0] == "decode":
        family, attn, kind = parts[1], parts[2], parts[3]
        over = TINY_LLAMA if kind.endswith("-tiny") else {}
        model = hf.build(family, attn=attn, **over)
        name = f"hf_{family}_decode_{attn}_{kind.replace('-', '_')}.json"
        try:
            e = hf.export_decode(model, os.path.join(out_dir, name), max_cache_len=32, position=5,
                                 embeds=kind.startswith("embeds"))
        except Exception:
            dump_decode_graph(model, os.path.join(out_dir, name[:-5] + ".graph.txt"))
            raise
        return {"ops": e.ops, "nodes": e.nodes}
    if parts[0] == "coverage":  # eager attention, the MoE expert implementation torch.export takes
        family, kind = parts[1], parts[2]
        path = os.path.join(out_dir, f"{family}_{kind}.json")
        tried = []
        for experts in (hf.EXPERTS if family in hf.MOE else (None,)):
            try:
                model = hf.build(family, attn="eager", experts=experts, **hf.coverage_sizes(family))
                e = (hf.export_logits(model, path) if kind == "logits"
                     else hf.export_decode(model, path, max_cache_len=32, position=5, embeds=kind == "embeds"))
                return {"ops": e.ops, "nodes": e.nodes, "experts": experts, "tried": tried}
            except Exception as ex:  # noqa: BLE001 - next expert implementation
                tried.append(f"{experts}: {type(ex).__name__}: {str(ex)[:400]}")
                if experts is None or experts == hf.EXPERTS[-1]:
                    raise
    if parts[0] == "dynamo":
        return run_dynamo(out_dir)
    if parts[0] == "big":
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        model = hf.build("llama", attn="eager", dtype=torch.float16, device=dev, **LLAMA2_7B)
        e = hf.export_decode(model, os.path.join(out_dir, "hf_llama2_7b_decode_f16.json"), max_cache_len=2048,
                             position=2047, embeds=True, write_arrays=False, prefill=False)
        os.remove(e.bin_path)  # empty (sparse) anyway: recreated with `truncate` where it is used
        return {"ops": e.ops, "nodes": e.nodes, "device": dev}
    raise ValueError(f"unknown job {job}")


def child(job: str, out_dir: str) -> int:
    t0 = time.time()
    try:
        info = run_job(job, out_dir)
        res = {"job": job, "ok": True, **info}
    except Exception as ex:  # noqa: BLE001 - reported, not raised
        res = {"job": job, "ok": False, "error": f"{type(ex).__name__}: {ex}"[:2000],
               "traceback": traceback.format_exc()[-6000:]}
    res["seconds"] = round(time.time() - t0, 2)
    print("RESULT " + json.dumps(res), flush=True)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "--job":
        return child(argv[2], argv[3])
    args = argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = args[0]
    n = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 4
    only = args[args.index("--only") + 1] if "--only" in args else ""
    todo = [j for j in jobs("--big" in args, "--coverage" in args) if re.search(only, j)]
    os.makedirs(out_dir, exist_ok=True)
    running, results = [], []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    while todo or running:
        while todo and len(running) < n:
            j = todo.pop(0)
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--job", j, out_dir], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            running.append((j, p, time.time()))
        time.sleep(0.2)
        for j, p, t in list(running):
            if p.poll() is None and time.time() - t < 400:
                continue
            if p.poll() is None:
                p.kill()
            out = p.communicate()[0]
            line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
            res = json.loads(line[7:]) if line else {"job": j, "ok": False, "error": "no result", "log": out[-4000:]}
            results.append(res)
            running.remove((j, p, t))
            print(f"{'ok  ' if res['ok'] else 'FAIL'} {j} {res.get('seconds', '')}s "
                  f"{res.get('error', '')[:300]}", flush=True)
    import torch

    summary = {"torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "results": sorted(results, key=lambda r: r["job"])}
    try:
        import transformers

        summary["transformers"] = transformers.__version__
    except ImportError:
        pass
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
