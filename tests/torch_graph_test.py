"""ctest torch_graph_eager: the eager PyTorch spelling of each core graph (`lpu compile W --emit
torch`, torch_graph.py) run on CPU with Debian's PyTorch against lpu's reference data (`--emit
triton-data`: the inputs, and the reference executor's outputs or PyTorch's own for a graph file),
with scripts/triton_check.py's loaders and tolerances. It is what the GPU harness runs eagerly and
hands to torch.compile, so its meaning must be the graph's.

  pytest tests/torch_graph_test.py --lpu LPU [--workdir OUTDIR] [--workloads W ...] [--graphs FILE_OR_DIR ...]
         [--min-checked N]

A graph in f16/bf16 whose op Debian's CPU PyTorch has no half kernel for ("not implemented for
'Half'") is run with its floating inputs in f32 instead and said so; any other failure fails the test.
It passes when every graph matched and at least --min-checked were checked.
"""
import glob
import importlib.util
import json
import os
import subprocess

from lpu_workbench import triton_data  # loaders and tolerances, shared with scripts/triton_check.py


def load(path, name, f32=False):
    """The module; with f32, its half dtypes read as float32 (Debian's CPU PyTorch 1.13 has no half
    kernels for many ops; the GPU harness runs the f16 graphs as they are)."""
    src = open(path).read()
    if f32:
        src = src.replace("torch.float16", "torch.float32").replace("torch.bfloat16", "torch.float32")
        src = src.replace('"f16", [', '"f32", [').replace('"bf16", [', '"f32", [')
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def check_graph(torch, lpu, w, outdir, idx):
    d = os.path.join(outdir, "%03d_%s" % (idx, os.path.basename(w).replace(".", "_")))
    r = subprocess.run([lpu, "compile", w, "--fusion", "none", "--emit", "torch,triton-data", "-o", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return False, "lpu compile exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    data = json.load(open(os.path.join(d, "triton_data.json")))
    mod = load(os.path.join(d, "torch_graph.py"), "torch_graph_%d" % idx)
    inputs, want = triton_data.data_inputs(torch, d, data)
    half = any(dt in ("f16", "bf16") for _, dt, _ in mod.INPUTS)
    tol = triton_data.tolerance_for(half, data)
    note = ""
    try:
        got = mod.run(inputs, "cpu")
    except RuntimeError as e:
        if "not implemented for 'Half'" not in str(e) and "not implemented for 'BFloat16'" not in str(e):
            raise
        got = load(os.path.join(d, "torch_graph.py"), "torch_graph_f32_%d" % idx, f32=True).run(inputs, "cpu")
        note = " (run in f32: CPU PyTorch says %s)" % str(e).splitlines()[0][:60]
    if sorted(got) != sorted(want):
        return False, "outputs %s, the reference %s" % (list(got), list(want))
    ok, err = triton_data.compare(torch, got, want, tol)
    return ok, "max error %.3g (%s)%s" % (err, tol[2], note)


def test_eager_torch_graphs_match_the_reference(lpu, workdir, option):
    import torch  # Debian's python3-torch (CPU)
    files = list(option("--workloads"))
    for g in option("--graphs"):
        files += sorted(glob.glob(os.path.join(g, "**", "*.json"), recursive=True)) if os.path.isdir(g) else [g]
    files = [f for f in files if not f.endswith(("export_log.json", "manifest.json"))]
    failed = []
    for i, w in enumerate(files):
        try:
            ok, msg = check_graph(torch, lpu, w, workdir, i)
        except Exception as e:  # report every graph, then fail
            ok, msg = False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        print("%s %s: %s" % ("PASS" if ok else "FAIL", w, msg), flush=True)
        if not ok:
            failed.append("%s: %s" % (w, msg))
    print("%d of %d graphs matched their reference" % (len(files) - len(failed), len(files)))
    assert not failed, "%d graphs did not match:\n" % len(failed) + "\n".join(failed)
    assert len(files) >= option("--min-checked"), "%d graphs checked, fewer than --min-checked %d" % (
        len(files), option("--min-checked"))
