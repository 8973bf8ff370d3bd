"""The workbench from Python, in process (docs/python.md): the jobs of the `lpu` CLI called
through its libraries, not the binary.

    import lpu
    r = lpu.run("opt-1.3b", arch="lpu-asic")             # the dict `lpu run --json` writes
    r["latency_us"], r.text                               # ... and what `lpu run` prints
    lpu.run({"model": "softmax", "d_model": 2048}, overrides={"hbm.bandwidth_gbps": 1600})
    lpu.compare("softmax", fusion=["none", "greedy"]).to_frame()
    lpu.sweep.load("out/sweeps/hbm_lmu")                  # a DataFrame (pandas), else dicts

Workloads are names (`lpu list workloads`), paths (YAML, graph files, manifests) or dicts of the
workload YAML's keys; `arch` is a name in configs/ or a path; `overrides` a dict of config keys
(and `workload.KEY`s) as `--set` takes them. Bad input raises lpu.InputError (a ValueError) with
the CLI's message; TypeError names an argument of the wrong type. Jobs release the GIL: threads
compile in parallel, and their simulations take turns (SystemC has one kernel per process)."""
from . import profile, sweep
from ._args import common, emit_arg, int_or_none, policies_arg, serve_args, sets_arg
from ._native import load as _load
from .errors import CheckFailed, InputError, InternalError, LpuError, SimulationStuck
from .result import Result

_lpu = _load()
_lpu._set_error_classes(InputError, CheckFailed, SimulationStuck, InternalError)

__all__ = ["run", "compare", "compile", "generate", "serve", "check_config", "sweep", "profile", "Result", "LpuError", "InputError", "CheckFailed",
           "SimulationStuck", "InternalError", "policies", "default_arch"]


def run(workload, *, arch=None, overrides=None, fusion="greedy", functional=False, trace=False,
        on_unsupported="error", unsupported_ops=(), tp=None):
    """`lpu run`: compile and simulate one workload. Returns the --json dict as a Result (its
    `.text` is what the CLI prints; `.trace` the Perfetto trace when trace=True). A failed
    functional check raises CheckFailed, whose `.result` still holds the statistics."""
    c = common(_lpu, workload, arch, overrides, fusion, on_unsupported, unsupported_ops, tp)
    js, text, failed, trace_js = _lpu.run(c, bool(functional), bool(trace))
    result = Result.from_json(js, text, kind="run")
    if trace_js:
        import json
        result.trace = json.loads(trace_js)
    if failed:
        raise CheckFailed(failed, result)
    return result


def compare(workload, *, arch=None, overrides=None, fusion=("none", "greedy"), functional=False,
            on_unsupported="error", unsupported_ops=(), tp=None):
    """`lpu compare`: one workload under several fusion policies (a list, or "a,b").
    Returns the --json dict ({"workload", "arch", "arch_overrides", "runs": [...]})."""
    c = common(_lpu, workload, arch, overrides, "greedy", on_unsupported, unsupported_ops, tp)
    js, table, ok = _lpu.compare(c, policies_arg(fusion), bool(functional))
    result = Result.from_json(js, table, kind="compare")
    if not ok:
        raise CheckFailed("functional check failed", result)
    return result


def compile(workload, *, arch=None, overrides=None, fusion="greedy", emit=("asm",), on_unsupported="error",
            unsupported_ops=()):
    """`lpu compile --emit ...` without files: {artefact: text} in the order asked (backends:
    `lpu compile --help`). Binary artefacts and triton-data need `lpu compile -o DIR`."""
    c = common(_lpu, workload, arch, overrides, fusion, on_unsupported, unsupported_ops, None)
    texts, notes = _lpu.compile(c, emit_arg(emit))
    out = dict(texts)
    if notes:
        out["notes"] = notes
    return out


def generate(workload, *, arch=None, overrides=None, fusion="greedy", prompt_len=None, gen_len=None,
             symbolic=True, regional=True, on_unsupported="error", unsupported_ops=()):
    """`lpu generate`: a whole generation (prefill, then a decode step per token). Returns the
    --json dict; `.to_frame()` gives one row per step."""
    c = common(_lpu, workload, arch, overrides, fusion, on_unsupported, unsupported_ops, None)
    js, summary = _lpu.generate(c, int_or_none("prompt_len", prompt_len), int_or_none("gen_len", gen_len),
                                bool(symbolic), bool(regional))
    return Result.from_json(js, summary, kind="generate")


def serve(workload, *, arch=None, overrides=None, fusion="greedy", tp=None, **options):
    """`lpu serve`: many users' requests through a simulated cluster (docs/serving.md). The
    keywords are the CLI's flags with underscores, e.g. rate=2.0, requests=200, seed=1,
    prompt="uniform:16:512", trace_file="workloads/traces/chat-1000.csv", chunked_prefill=False,
    prefill_replicas=1, prefill_gpu="h200", exact=True, find_rate=True; left out, the CLI's
    defaults. Returns the --json dict (every request, every replica's steps); `.to_frame()` gives
    one row per request. A run the watchdog truncated returns what it measured ("truncated")."""
    c = common(_lpu, workload, arch, overrides, fusion, "error", (), tp)
    js, summary = _lpu.serve(c, serve_args(_lpu, options))
    return Result.from_json(js, summary, kind="serve")


def check_config(arch, *, overrides=None):
    """`lpu check-config`: the architecture config, checked, as a dict (`.text`: its description)."""
    if not isinstance(arch, str) and not hasattr(arch, "__fspath__"):
        raise TypeError("arch: expected a name or a path, got %s" % type(arch).__name__)
    import os
    js, text = _lpu.check_config(os.fspath(arch), sets_arg(overrides))
    return Result.from_json(js, text, kind="config")


def policies():
    """The fusion policies (`--fusion`)."""
    return _lpu.policy_names().split(",")


def default_arch():
    """The config `--arch` defaults to."""
    return _lpu.default_config_name()
