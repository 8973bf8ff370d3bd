"""Loading report inputs into one shape.

Inputs, told apart by content (not by file name):
  * a sweep directory: results.jsonl (or shard files results-I-of-N.jsonl) + manifest.json,
    as written by `lpu sweep`;
  * compare JSON (`lpu compare --json`): {"workload", "arch", "runs": [run, ...]};
  * run JSON (`lpu run --json`): one run's statistics;
  * generate JSON (`lpu generate --json`): {"kind": "generate", "steps": [...], ...};
  * serve JSON (`lpu serve --json`): {"kind": "serve", "summary", "replicas", "requests", ...};
  * trace JSON (`lpu run --trace`): {"traceEvents": [...]}, optionally with "otherData"
    naming workload and fusion policy, which pairs it with its run; a serving trace
    (`lpu serve --trace`, otherData.kind "serve") is for Perfetto and only listed.

Every run becomes a `Run`: flat statistics under dotted names (the same names as the sweep's
CSV columns: latency_us, engines.vxe.utilization, arch.hbm.bandwidth_gbps, work.vxe_elem_ops),
the kernel list, and the architecture as nested JSON. Nothing here assumes a fixed set of
statistics or engines: plots look keys up and say so when one is missing.
"""
import glob
import json
import os


class InputProblem(Exception):
    """Unusable input: the script exits with code 2."""


class Run:
    def __init__(self, workload, fusion, flat, kernels, arch, point=None, trace=None, source=""):
        self.workload = workload
        self.fusion = fusion
        self.flat = flat          # dotted name -> scalar
        self.kernels = kernels or []
        self.arch = arch or {}
        self.point = point or {}  # swept key -> value (sweep rows only)
        self.trace = trace        # path of a trace file, or None
        self.source = source

    @property
    def label(self):
        return "%s / %s" % (self.workload, self.fusion)

    def get(self, key, default=None):
        return self.flat.get(key, default)

    def arch_value(self, dotted, default=None):
        node = self.arch
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


class Trace:
    def __init__(self, path, events, workload=None, fusion=None):
        self.path = path
        self.events = events
        self.workload = workload
        self.fusion = fusion

    @property
    def label(self):
        if self.workload and self.fusion:
            return "%s / %s" % (self.workload, self.fusion)
        return os.path.basename(self.path)


class Serve:
    """One `lpu serve --json` result, as read."""

    def __init__(self, path, data):
        self.path = path
        self.data = data


class Inputs:
    def __init__(self):
        self.runs = []        # every run (for a sweep: every successful point)
        self.traces = []
        self.sweep = None     # Sweep, when a sweep directory was given
        self.generations = []  # `lpu generate --json` results, as read
        self.serves = []      # `lpu serve --json` results (Serve)
        self.serve_traces = []  # paths of serving traces (Perfetto only: not drawn)
        self.sources = []


class Sweep:
    def __init__(self, path, manifest, rows):
        self.path = path
        self.manifest = manifest
        self.rows = rows      # every row of results.jsonl that belongs to this sweep
        self.axes = [a["key"] for a in manifest.get("axes", [])]
        self.axis_values = {a["key"]: a["values"] for a in manifest.get("axes", [])}
        self.reference = manifest.get("reference", {})
        self.name = manifest.get("name", os.path.basename(os.path.normpath(path)))

    def is_reference(self, run):
        return all(run.point.get(k) == v for k, v in self.reference.items())


def flatten(obj, prefix="", out=None):
    """Scalars of nested JSON under dotted names; arrays are left out."""
    out = {} if out is None else out
    for k, v in obj.items():
        key = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            flatten(v, key, out)
        elif not isinstance(v, list):
            out[key] = v
    return out


def unflatten(flat, prefix):
    """{"arch.hbm.bandwidth_gbps": 1} with prefix "arch" -> {"hbm": {"bandwidth_gbps": 1}}."""
    root = {}
    for k, v in flat.items():
        if not k.startswith(prefix + "."):
            continue
        node = root
        parts = k[len(prefix) + 1:].split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return root


def run_from_json(j, source):
    flat = flatten({k: v for k, v in j.items() if k not in ("workload",)})
    wl = j.get("workload")
    name = wl.get("name") if isinstance(wl, dict) else (wl or "?")
    return Run(name, j.get("fusion", "?"), flat, j.get("kernels"), j.get("arch"), source=source)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputProblem("%s: cannot read JSON: %s" % (path, e))
    except RecursionError:  # json.load recurses per nesting level
        raise InputProblem("%s: cannot read JSON: nested too deeply" % path)


def load_sweep_dir(path, inputs):
    # A whole or merged sweep's results.jsonl, and shard files (`lpu sweep --shard I/N`,
    # Slurm tasks) not merged yet: each point once.
    files = [os.path.join(path, "results.jsonl")] + sorted(glob.glob(os.path.join(path, "results-*-of-*.jsonl")))
    files = [f for f in files if os.path.exists(f)]
    manifest_path = os.path.join(path, "manifest.json")
    if not files or not os.path.exists(manifest_path):
        raise InputProblem("%s: not a sweep directory (needs results.jsonl or shard results-I-of-N.jsonl, and "
                           "manifest.json from `lpu sweep`)" % path)
    manifest = load_json(manifest_path)
    axes = [a["key"] for a in manifest.get("axes", [])]
    rows, seen = [], set()
    for results in files:
        with open(results) as f:
            for n, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    break  # a row torn by a killed sweep; `lpu sweep --resume` removes it
                try:
                    row = json.loads(line)
                except ValueError as e:
                    raise InputProblem("%s:%d: not a JSON row: %s" % (results, n, e))
                if row.get("point_id") not in seen:
                    seen.add(row.get("point_id"))
                    rows.append(row)
    results = os.path.join(path, "results.jsonl")  # the runs' source: the sweep, merged or not
    rows = [r for r in rows if in_sweep(r, manifest)]
    sweep = Sweep(path, manifest, rows)
    for r in rows:
        if r.get("status") != "ok":
            continue
        flat = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
        trace = os.path.join(path, r["trace"]) if r.get("trace") else None
        run = Run(r["workload"], r["fusion"], flat, r.get("kernels"), unflatten(flat, "arch"),
                  point={k: r[k] for k in axes}, trace=trace, source=results)
        inputs.runs.append(run)
        if trace and os.path.exists(trace) and sweep.is_reference(run):
            inputs.traces.append(load_trace(trace, load_json(trace), run.workload, run.fusion))
    # Rows are in completion order (parallel, resumed); plots want the sweep file's order.
    w_order = {w["name"]: i for i, w in enumerate(manifest.get("workloads", []))}
    f_order = {f: i for i, f in enumerate(manifest.get("fusion", []))}

    def position(workload, fusion, point=None):
        key = [w_order.get(workload, 0), f_order.get(fusion, 0)]
        for a in manifest.get("axes", []):
            v = (point or {}).get(a["key"])
            key.append(a["values"].index(v) if v in a["values"] else 0)
        return key
    inputs.runs.sort(key=lambda r: position(r.workload, r.fusion, r.point))
    inputs.traces.sort(key=lambda t: position(t.workload, t.fusion))
    inputs.sweep = sweep


def in_sweep(row, manifest):
    """Whether a row is a point of the sweep as the manifest describes it now: rows of points
    the sweep file no longer has (edited between runs) are left out."""
    if row.get("workload") not in {w["name"] for w in manifest.get("workloads", [])}:
        return False
    if row.get("fusion") not in manifest.get("fusion", []):
        return False
    index = set()
    for a in manifest.get("axes", []):
        if a["key"] not in row or row[a["key"]] not in a["values"]:
            return False
        index.add(a["values"].index(row[a["key"]]))
    return manifest.get("combine") != "zip" or len(index) <= 1


def load_trace(path, j, workload=None, fusion=None):
    events = j.get("traceEvents")
    if not isinstance(events, list):
        raise InputProblem("%s: traceEvents is not a list" % path)
    other = j.get("otherData") or {}
    return Trace(path, events, workload or other.get("workload"), fusion or other.get("fusion"))


def load_serve(path, j):
    """A serve JSON needs its summary and its requests; replicas' step series are optional (plots
    say when they are missing)."""
    if not isinstance(j.get("summary"), dict) or not isinstance(j.get("requests"), list):
        raise InputProblem("%s: a serve JSON (\"kind\": \"serve\") without a summary object and a requests list"
                           % path)
    if not isinstance(j.get("replicas", []), list):
        raise InputProblem("%s: replicas is not a list" % path)
    return Serve(path, j)


def load_inputs(paths):
    inputs = Inputs()
    for p in paths:
        inputs.sources.append(p)
        if os.path.isdir(p):
            if inputs.sweep is not None:
                raise InputProblem("%s: only one sweep directory per report" % p)
            load_sweep_dir(p, inputs)
            continue
        if not os.path.exists(p):
            raise InputProblem("%s: no such file or directory" % p)
        j = load_json(p)
        if isinstance(j, dict) and "traceEvents" in j and (j.get("otherData") or {}).get("kind") == "serve":
            inputs.serve_traces.append(p)
        elif isinstance(j, dict) and "traceEvents" in j:
            inputs.traces.append(load_trace(p, j))
        elif isinstance(j, dict) and j.get("kind") == "serve":
            inputs.serves.append(load_serve(p, j))
        elif isinstance(j, dict) and j.get("kind") == "generate" and isinstance(j.get("steps"), list):
            inputs.generations.append(j)
        elif isinstance(j, dict) and isinstance(j.get("runs"), list):
            inputs.runs.extend(run_from_json(r, p) for r in j["runs"])
        elif isinstance(j, dict) and "latency_us" in j:
            inputs.runs.append(run_from_json(j, p))
        else:
            raise InputProblem("%s: neither a run, a compare result, nor a trace (see docs/reports.md)" % p)
    if inputs.sweep and any(r.source != os.path.join(inputs.sweep.path, "results.jsonl") for r in inputs.runs):
        raise InputProblem("a sweep directory cannot be mixed with run or compare files in one report "
                           "(trace files are fine)")
    # Pair traces given as files with their runs (by workload and policy), so the timeline
    # can be titled by the run.
    for t in inputs.traces:
        for r in inputs.runs:
            if r.trace is None and (r.workload, r.fusion) == (t.workload, t.fusion):
                r.trace = t.path
    return inputs
