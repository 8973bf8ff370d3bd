"""The Python module `lpu` (python/lpu, bindings/python; docs/python.md) against the CLI: the
same jobs give the same JSON, bad input raises the exception of the CLI's exit class with its
message (the bad-input catalogue fed through the module: nothing crashes the interpreter), and
threads give what a serial loop gives.

    LPU_BUILD_DIR=build PYTHONPATH=python:reports /usr/bin/python3 -m pytest tests/python_module_test.py --lpu build/lpu
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

import lpu as lpumod

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli_json(lpu, *args):
    """`lpu ARGS --json FILE`, the file's dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        subprocess.run([lpu, *args, "--json", out], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def cli_error(lpu, *args):
    p = subprocess.run([lpu, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stderr


# ---- the same JSON as the CLI ------------------------------------------------------------------

def test_run_equals_cli(lpu):
    r = lpumod.run("ln_gelu_add", overrides={"hbm.bandwidth_gbps": 128})
    assert r == cli_json(lpu, "run", "ln_gelu_add", "--set", "hbm.bandwidth_gbps=128")
    assert isinstance(r, dict) and "latency_us" in r and "HBM floor" in r.text


def test_acceptance_opt_on_asic(lpu):
    """The issue's acceptance line: lpu.run('opt-1.3b', arch='lpu-asic')['latency_us']."""
    r = lpumod.run("opt-1.3b", arch="lpu-asic")
    assert r["latency_us"] == cli_json(lpu, "run", "opt-1.3b", "--arch", "lpu-asic")["latency_us"]


def test_dict_workload_equals_yaml(lpu, tmp_path):
    keys = {"model": "softmax", "batch": 1, "seq_len": 64, "cols": 512}
    path = tmp_path / "sm.yaml"
    path.write_text("".join("%s: %s\n" % kv for kv in keys.items()))
    r = lpumod.run(keys, fusion="none")
    want = cli_json(lpu, "run", str(path), "--fusion", "none")
    for d in (r, want):  # where it came from differs: a dict has no file, and is named by its model
        d.pop("workload", None)
        d.get("workload_spec", {}).pop("file", None)
        d.get("workload_spec", {}).pop("name", None)
    assert r == want


def test_compare_equals_cli(lpu):
    r = lpumod.compare("softmax", fusion=["none", "greedy"], overrides={"lmu.capacity_kib": 256})
    assert r == cli_json(lpu, "compare", "softmax", "--fusion", "none,greedy", "--set", "lmu.capacity_kib=256")
    frame = r.to_frame()
    assert list(frame["fusion"]) == ["none", "greedy"] and "engines.vxe.utilization" in frame.columns


def test_generate_equals_cli(lpu):
    r = lpumod.generate("tiny-opt", prompt_len=8, gen_len=4)
    want = cli_json(lpu, "generate", "tiny-opt", "--prompt-len", "8", "--gen-len", "4")
    r.pop("wall"), want.pop("wall")  # wall times differ between runs
    assert r == want and len(r.to_frame()) == 4


def test_serve_equals_cli(lpu):
    r = lpumod.serve("tiny-llama", rate=40, requests=20, seed=3, prompt="uniform:4:40", chunked_prefill=False)
    want = cli_json(lpu, "serve", "tiny-llama", "--rate", "40", "--requests", "20", "--seed", "3", "--prompt",
                    "uniform:4:40", "--no-chunked-prefill")
    assert r == want  # byte-identical for a seed: no wall times without --json-wall
    frame = r.to_frame()
    assert len(frame) == 20 and "ttft_s" in frame.columns


def test_serve_bad_keywords_and_values():
    with pytest.raises(TypeError, match="unknown keyword 'rates'"):
        lpumod.serve("tiny-llama", rates=2)
    with pytest.raises(TypeError, match="requests: expected an int"):
        lpumod.serve("tiny-llama", requests=2.5)
    with pytest.raises(lpumod.InputError, match="--slo-ttft-ms"):
        lpumod.serve("tiny-llama", requests=2, slo_ttft_ms=-1)
    with pytest.raises(lpumod.InputError, match="router: .random."):
        lpumod.serve("tiny-llama", requests=2, router="random")


def test_compile_texts(lpu):
    texts = lpumod.compile("ln_gelu_add", emit=["schedule", "asm"])
    p = subprocess.run([lpu, "compile", "ln_gelu_add", "--emit", "asm"], cwd=ROOT, check=True, capture_output=True,
                       text=True)
    assert texts["asm"] == p.stdout and list(texts) == ["schedule", "asm"]
    with pytest.raises(lpumod.InputError, match="--emit bin writes files"):
        lpumod.compile("ln_gelu_add", emit="bin")


SWEEP = """name: tiny
base: lpu-small
workloads: [ln_gelu_add, softmax]
fusion: [none, greedy]
axes:
  hbm.bandwidth_gbps: [128, 512]
"""


def test_sweep_load_and_run_equal_cli(lpu, tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SWEEP)
    out = tmp_path / "out"
    subprocess.run([lpu, "sweep", str(spec), "-j", "2", "-o", str(out)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    with open(out / "results.jsonl") as f:
        cli_rows = [json.loads(line) for line in f]
    rows = lpumod.sweep.load(out, as_frame=False)
    assert rows == cli_rows
    frame = lpumod.sweep.load(out)
    assert len(frame) == 8 and "hbm.bandwidth_gbps" in frame.columns and "kernels" not in frame.columns
    mine = {r["point_id"]: r for r in lpumod.sweep.run(str(spec), workers=2, as_frame=False)}
    for row in cli_rows:  # in process: the same row but for the wall time and the trace file
        got = dict(mine[row["point_id"]])
        for k in ("wall_s", "trace"):
            got.pop(k), row.pop(k)
        assert got == row, row["point_id"]


# ---- threads -------------------------------------------------------------------------------------

def test_threads_equal_serial():
    points = [{"hbm.bandwidth_gbps": bw, "lmu.capacity_kib": kib} for bw in (128, 256, 512) for kib in (64, 256)]
    run = lambda o: lpumod.run("softmax", fusion="none", overrides=o)  # noqa: E731
    serial = [run(o) for o in points]
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = list(pool.map(run, points))
    assert threaded == serial


# ---- errors --------------------------------------------------------------------------------------

def test_bad_override_is_input_error_with_cli_message(lpu):
    code, err = cli_error(lpu, "run", "ln_gelu_add", "--set", "hbm.chanels=4")
    assert code == 2
    with pytest.raises(lpumod.InputError) as e:
        lpumod.run("ln_gelu_add", overrides={"hbm.chanels": 4})
    assert isinstance(e.value, ValueError) and e.value.exit_code == 2
    assert err.strip() == "error: " + str(e.value)


def test_bad_workload_dict_names_the_key():
    with pytest.raises(lpumod.InputError, match="sotfmax|unknown model"):
        lpumod.run({"model": "sotfmax"})
    with pytest.raises(lpumod.InputError, match=r"workload dict:2: d_modle: unknown key"):
        lpumod.run({"model": "softmax", "d_modle": 64})  # line 2: one key a line
    with pytest.raises(lpumod.InputError, match=r"batch"):
        lpumod.run({"model": "softmax", "batch": 0})


def test_type_errors_name_the_argument():
    with pytest.raises(TypeError, match="fusoin"):
        lpumod.run("softmax", fusoin="none")
    with pytest.raises(TypeError, match="overrides: hbm.bandwidth_gbps"):
        lpumod.run("softmax", overrides={"hbm.bandwidth_gbps": object()})
    with pytest.raises(TypeError, match="overrides: expected a dict"):
        lpumod.run("softmax", overrides=["hbm.bandwidth_gbps=1"])
    with pytest.raises(TypeError, match="workload: expected"):
        lpumod.run(42)
    with pytest.raises(TypeError, match="fusion: expected a str"):
        lpumod.run("softmax", fusion=1)
    with pytest.raises(lpumod.InputError, match="hbm.bandwidth_gbps: expected a number"):
        lpumod.run("softmax", overrides={"hbm.bandwidth_gbps": "fast"})


def test_stuck_simulation():
    with pytest.raises(lpumod.SimulationStuck) as e:
        lpumod.run("softmax", overrides={"sim.max_us": 0.001})
    assert e.value.exit_code == 3 and "did not finish" in str(e.value)


# ---- the bad-input catalogue through the module ---------------------------------------------------



def _load(name):
    """A module of tests/badinput/ by its path (nothing is added to sys.path, docs/python.md)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tests", "badinput", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # run_catalogue imports `cases` by name
    spec.loader.exec_module(module)
    return module


catalogue = _load("cases")
fill = _load("run_catalogue").fill

CLASSES = {1: lpumod.CheckFailed, 2: lpumod.InputError, 3: lpumod.SimulationStuck, 4: lpumod.InternalError}
# The flags of run, compare, compile, generate and check-config as keyword arguments.
FLAG_KW = {"--arch": "arch", "--fusion": "fusion", "--tp": "tp", "--on-unsupported": "on_unsupported",
           "--unsupported-ops": "unsupported_ops", "--emit": "emit", "--prompt-len": "prompt_len",
           "--gen-len": "gen_len"}
INT_KW = {"tp", "prompt_len", "gen_len"}


def module_call(args):
    """(function, positional, keywords) for a case's CLI arguments, or None when the case is
    about the CLI itself (output files, unknown flags, flag syntax) and has no module spelling."""
    command, rest = args[0], list(args[1:])
    fn = {"run": lpumod.run, "compare": lpumod.compare, "compile": lpumod.compile, "generate": lpumod.generate,
          "check-config": lpumod.check_config}.get(command)
    if fn is None or not rest or rest[0].startswith("-"):
        return None
    pos, kw, overrides = rest.pop(0), {}, {}
    while rest:
        flag = rest.pop(0)
        if not rest:
            return None
        value = rest.pop(0)
        if flag == "--set" and "=" in value:
            k, v = value.split("=", 1)
            overrides[k] = v
        elif flag in FLAG_KW:
            kw[FLAG_KW[flag]] = value
        else:
            return None
    for k in INT_KW & set(kw):
        try:
            kw[k] = int(kw[k])
        except ValueError:
            return None  # a flag's number syntax: CLI11's to check
    if command == "check-config" and kw:
        return None
    if overrides:
        kw["overrides"] = overrides
    return fn, pos, kw


def catalogue_cases():
    out = []
    for c in catalogue.CASES:
        # flags_*: how the CLI parses its flags (CLI11's kinds), which keyword arguments do not have.
        if c.open_issue or not c.args or c.name.startswith("flags_") or module_call(c.args) is None:
            continue
        out.append(c)
    return out


def test_bad_input_catalogue_through_the_module():
    """Every case the module can express raises the exception of its exit class, with a message
    the case's pattern matches; none crashes the interpreter."""
    cases, problems, checked = catalogue_cases(), [], 0
    assert len(cases) > 100
    for c in cases:
        tmp = tempfile.mkdtemp(prefix="lpu-bad-")
        try:
            paths = {"tmp": tmp, "repo": ROOT}
            for key, make in c.files.items():
                paths[key] = make(tmp, key, ROOT)
            fn, pos, kw = module_call([fill(a, paths) for a in c.args])
            pattern = fill(c.pattern, {k: re.escape(v) for k, v in paths.items()})
            try:
                fn(pos, **kw)
                problems.append("%s: no exception (CLI exit %d)" % (c.name, c.exit))
            except lpumod.LpuError as e:
                if not isinstance(e, CLASSES[c.exit]):
                    problems.append("%s: %s, expected %s: %s" % (c.name, type(e).__name__,
                                                                 CLASSES[c.exit].__name__, e))
                elif c.exit == 2 and not re.search(pattern, "error: " + str(e)):
                    problems.append("%s: message lacks /%s/: %s" % (c.name, pattern, str(e)[:300]))
                checked += 1
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d catalogue cases through the module, %d problems" % (checked, len(problems)))
    assert not problems, "\n".join(problems)
