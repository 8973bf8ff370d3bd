"""torch.compile to a simulated answer: `lpu_frontend.simulate(arch=...)` (docs/frontend.md).

    sim = lpu_frontend.simulate(arch="lpu-asic")
    compiled = torch.compile(model, backend=sim)      # torch >= 2.0 (Dynamo)
    compiled = sim.compile(model)                     # any torch: Dynamo on 2.x, the make_fx route on 1.13
    y = compiled(x)                                   # PyTorch's own outputs (each graph runs eagerly)
    print(sim.summary())                              # graphs, breaks priced on the host, recompilations

Every graph is exported by the frontend's own capture and writer (ManifestRecorder.backend:
`export`, make_fx re-trace) and simulated in process by the module `lpu` (`lpu.run` on the graph
file); a model call of several graphs is written as a manifest and `lpu.run` prices its breaks
as `lpu run MANIFEST` does (docs/graph-format.md). The module takes graphs as files only, so the
files live in a temporary directory the object owns (removed by close(), or when it is
collected; `keep_dir=` keeps them).

Graph breaks on torch 1.13 (no Dynamo): `compile(model)` runs the model eagerly under a
TorchDispatchMode that records every ATen op, and cuts the recording where Python reads a
tensor's value (`.item()`, `bool(t)`, `if t:`: aten._local_scalar_dense) or calls
`lpu_frontend.graph_break()`, as Dynamo cuts its graphs; each piece becomes an FX graph of the
ops recorded, its inputs the tensors it takes from the user, the model's parameters and earlier
pieces, its outputs those later pieces, the host or the caller read. A new input signature
(shapes, dtypes) is a recompilation whose failed guard is that signature's first difference.
"""
import operator
import os
import shutil
import tempfile
import weakref

import torch

from .backend import ManifestRecorder


def graph_break():
    """Cuts the graph here: torch._dynamo.graph_break() under Dynamo, a cut of the recording on
    the make_fx route, nothing otherwise."""
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "graph_break"):
        dynamo.graph_break()
    if _Recording.active is not None:
        _Recording.active.cut("lpu_frontend.graph_break()")


class GraphStats(dict):
    """One graph: name, file, nodes, ops, latency_us, hbm_read_bytes, hbm_write_bytes, num_kernels,
    compile (the compile it came from: 0 first, n the n-th recompilation)."""


class Summary:
    """What a simulate backend recorded: graphs, the programs (model calls) with their breaks,
    recompilations. str() prints them."""

    def __init__(self, arch, graphs, programs, recompiles, route):
        self.arch, self.graphs, self.programs, self.recompiles, self.route = arch, graphs, programs, recompiles, route

    @property
    def breaks(self):
        """The breaks of the last program: [{node, op, bytes, host_us}] as `lpu run MANIFEST`."""
        return self.programs[-1]["graph_breaks"] if self.programs else []

    def __str__(self):
        out = ["lpu simulate (%s, %s): %d graphs, %d programs, %d recompilations"
               % (self.arch or "default arch", self.route, len(self.graphs), len(self.programs), len(self.recompiles))]
        out.append("%-10s %7s %8s %12s %14s %14s" % ("graph", "compile", "kernels", "latency_us", "hbm_read_B",
                                                     "hbm_write_B"))
        for g in self.graphs:
            out.append("%-10s %7d %8d %12.3f %14d %14d" % (g["name"], g["compile"], g["num_kernels"], g["latency_us"],
                                                            g["hbm_read_bytes"], g["hbm_write_bytes"]))
        for i, p in enumerate(self.programs):
            out.append("program %d: %s, %d breaks, host %.3f us, total %.3f us"
                       % (i, " -> ".join(p["graphs"]), len(p["graph_breaks"]), p["graph_breaks_host_us"],
                          p["latency_us"]))
            for b in p["graph_breaks"]:
                out.append("  break %s: %s, %d B over the host link, %.3f us on the host"
                           % (b["node"], b["op"], b["bytes"], b["host_us"]))
        for r in self.recompiles:
            out.append("recompile %d (%s): guard failed: %s" % (r["compile"], r.get("frame", "?"), r["reason"]))
        return "\n".join(out)

    __repr__ = __str__


class Simulate:
    """The backend object simulate() returns; see the module's docstring."""

    def __init__(self, arch="lpu-asic", fusion="greedy", overrides=None, tp=None, keep_dir=None):
        self.arch, self.fusion, self.overrides, self.tp = arch, fusion, overrides, tp
        if keep_dir:
            os.makedirs(keep_dir, exist_ok=True)
            self.dir, self._cleanup = keep_dir, None
        else:
            self.dir = tempfile.mkdtemp(prefix="lpu_simulate_")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.dir, True)
        self.rec = ManifestRecorder(self.dir)
        self.graphs, self.programs, self.recompiles = [], [], []
        self._priced = {}  # tuple of graph indices -> program dict
        self._stream_start = 0  # ManifestRecorder.calls not yet split into programs (Dynamo route)
        self._failures_seen = {}
        self._compiles = 0
        self._frames = {}  # graph index -> the Dynamo frame (code object) it was compiled from
        self.route = "dynamo"

    # ---- in process ------------------------------------------------------------------------------
    def _run(self, path):
        import lpu
        return lpu.run(path, arch=self.arch, overrides=self.overrides, fusion=self.fusion, tp=self.tp)

    def _add_graph(self, gm, example_inputs, compile_index):
        index = len(self.rec.graphs)
        call = self.rec.backend(gm, list(example_inputs))
        g = self.rec.graphs[index]
        r = self._run(os.path.join(self.dir, g["file"]))
        nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
        self.graphs.append(GraphStats(name=g["name"], file=g["file"], compile=compile_index, nodes=len(nodes),
                                      latency_us=r["latency_us"], hbm_read_bytes=r["hbm_read_bytes"],
                                      hbm_write_bytes=r["hbm_write_bytes"], num_kernels=r["num_kernels"],
                                      graph_breaks=r["graph_breaks"]))
        return call

    def _price(self, calls, user_inputs, result):
        """A model call's graphs as a manifest through lpu.run: breaks priced on the host."""
        key = tuple(gi for gi, _, _ in calls)
        if not calls or key in self._priced:
            return
        rec = self.rec
        saved = (rec.calls, rec.user_inputs, rec.result)
        rec.calls, rec.user_inputs, rec.result = list(calls), tuple(user_inputs), result
        try:
            path = rec.write(os.path.join(self.dir, "manifest_%d.json" % len(self.programs)))
        finally:
            rec.calls, rec.user_inputs, rec.result = saved
        r = self._run(path)
        p = {"graphs": [rec.graphs[gi]["name"] for gi in key], "manifest": os.path.basename(path),
             "latency_us": r["latency_us"], "graph_breaks": r.get("graph_breaks", []),
             "graph_breaks_host_us": r.get("graph_breaks_host_us", 0.0),
             "hbm_read_bytes": r["hbm_read_bytes"], "hbm_write_bytes": r["hbm_write_bytes"]}
        self._priced[key] = p
        self.programs.append(p)

    # ---- torch >= 2.0: a Dynamo backend ----------------------------------------------------------
    def __call__(self, gm, example_inputs):
        """Dynamo's backend call: export and simulate the graph, hand back its own forward (eager),
        wrapped to record what flows between graphs."""
        compile_index, frame = self._compile_id()
        self._frames[len(self.rec.graphs)] = frame.split("/")[0] if frame != "?" else None
        if compile_index > 0:
            self.recompiles.append({"compile": compile_index, "frame": frame, "reason": self._guard_failure()})
        return self._add_graph(gm, example_inputs, compile_index)

    def _compile_id(self):
        """(the frame's compile count, 'frame/compile') from Dynamo's CompileContext (torch >= 2.1);
        (0, '?') where this torch does not say."""
        try:
            from torch._guards import CompileContext
            cid = CompileContext.current_compile_id()
            return int(cid.frame_compile_id), "%s/%s" % (cid.frame_id, cid.frame_compile_id)
        except Exception:  # noqa: BLE001 - older Dynamo: no compile ids
            return 0, "?"

    def _guard_failure(self):
        """The newest guard failure Dynamo recorded (torch._dynamo.utils.guard_failures: code ->
        reasons, appended when a cached graph's guards fail) since the last look."""
        try:
            from torch._dynamo.utils import guard_failures
        except Exception:  # noqa: BLE001
            return "unknown (this torch keeps no guard_failures)"
        reason = None
        for code, reasons in list(guard_failures.items()):
            seen = self._failures_seen.get(code, 0)
            if len(reasons) > seen:
                reason = "%s: %s" % (getattr(code, "co_name", code), reasons[-1])
                self._failures_seen[code] = len(reasons)
        return reason or "unknown"

    def _split_stream(self):
        """Graph calls Dynamo made since the last look, cut into model calls: a call begins where
        a graph of the frame that began the last call runs (the model's forward: after a
        recompilation its graph is a new one, so a repeated graph alone would not show it), or
        where a graph would run a second time (each graph runs once a call). sim.compile() knows
        the calls' bounds instead. The inputs and result of a call seen only through
        torch.compile are unknown: its first graph's arguments stand for the inputs (what is not
        a parameter or an earlier result reads as a user input) and its last graph's results for
        the output."""
        calls = self.rec.calls[self._stream_start:]
        self._stream_start = len(self.rec.calls)
        program = []
        for c in calls + [None]:
            if c is None or self._begins_call(c[0], program):
                if program:
                    result = program[-1][2]
                    self._price(program, program[0][1], result if len(result) != 1 else result[0])
                program = []
            if c is not None:
                program.append(c)

    def _begins_call(self, graph, program):
        if not program:
            return False
        if any(graph == p[0] for p in program):
            return True
        frame = self._frames.get(graph)
        return frame is not None and frame == self._frames.get(program[0][0])

    # ---- any torch ------------------------------------------------------------------------------
    def compile(self, model):
        """A callable running `model` with every graph simulated: torch.compile(model, backend=self)
        where Dynamo exists, else the make_fx route (the module's docstring)."""
        if self.rec.model is None:
            self.rec.model = model  # the manifest names the parameters a graph takes
        if hasattr(torch, "compile") and getattr(torch, "_dynamo", None) is not None:
            compiled = torch.compile(model, backend=self)

            def run(*inputs):
                start = len(self.rec.calls)
                out = compiled(*inputs)
                self._price(self.rec.calls[start:], inputs, out)
                self._stream_start = len(self.rec.calls)
                return out

            return run
        self.route = "make_fx"
        return _Traced(self, model)

    def summary(self):
        if self.route == "dynamo":
            self._split_stream()
        return Summary(self.arch, list(self.graphs), list(self.programs), list(self.recompiles), self.route)

    def close(self):
        if self._cleanup is not None:
            self._cleanup()


def simulate(arch="lpu-asic", *, fusion="greedy", overrides=None, tp=None, keep_dir=None):
    """A torch.compile backend that simulates every graph on `arch` (a config name or path) with
    the fusion policy `fusion`; `overrides` ({"hbm.bandwidth_gbps": 1600}) and `tp` as lpu.run
    takes them; `keep_dir` keeps the graph files and manifests there. See Simulate."""
    return Simulate(arch=arch, fusion=fusion, overrides=overrides, tp=tp, keep_dir=keep_dir)


# ---- the make_fx route (torch without Dynamo) --------------------------------------------------

def _signature(inputs):
    return [(tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else ("py", repr(x)) for x in inputs]


def _guard_text(old, new):
    if len(old) != len(new):
        return "len(inputs) == %d (now %d)" % (len(old), len(new))
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b:
            return "inputs[%d]: %s %s == %s %s" % (i, a[1], list(a[0]) if a[0] != "py" else a, b[1],
                                                    list(b[0]) if b[0] != "py" else b)
    return "?"


class _Traced:
    """sim.compile(model) on torch without Dynamo: a recording per new input signature."""

    def __init__(self, sim, model):
        self.sim, self.model = sim, model
        self.seen = []  # signatures captured

    def __call__(self, *inputs):
        sig = _signature(inputs)
        if sig in self.seen:
            with torch.no_grad():
                return self.model(*inputs)  # guards hold: the graphs captured for it run (eagerly)
        compile_index = len(self.seen)
        if self.seen:
            self.sim.recompiles.append({"compile": compile_index, "frame": type(self.model).__name__,
                                        "reason": _guard_text(self.seen[-1], sig)})
        self.seen.append(sig)
        rec = _Recording(self.model, inputs)
        out = rec.run()
        calls = []
        for seg_gm, seg_inputs, seg_outputs in rec.graphs():
            first = len(self.sim.rec.graphs)
            self.sim._add_graph(seg_gm, seg_inputs, compile_index)
            calls.append((first, list(seg_inputs), list(seg_outputs)))
        self.sim._price(calls, inputs, out)
        return out


class _Recording:
    """Runs a model eagerly, recording its ATen ops in pieces cut where the host reads a value."""

    active = None

    def __init__(self, model, inputs):
        self.model, self.inputs = model, inputs
        self.pieces = [[]]  # each: [(func, args, kwargs, out)]
        self.host_reads = [[]]  # per piece: tensors whose value the host read at its end
        self.keep = []  # every tensor seen, alive so that id() stays unique

    def cut(self, why):
        if self.pieces[-1]:
            self.pieces.append([])
            self.host_reads.append([])

    def run(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        rec = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if func is torch.ops.aten._local_scalar_dense.default:
                    rec.host_reads[-1].append(args[0])
                    rec.keep.append(args[0])
                    rec.cut("item")
                    return out
                rec.pieces[-1].append((func, args, kwargs, out))
                rec.keep.append((args, kwargs, out))
                return out

        _Recording.active = self
        try:
            with torch.no_grad(), Mode():
                self.result = self.model(*self.inputs)
        finally:
            _Recording.active = None
        return self.result

    def graphs(self):
        """[(GraphModule, inputs, outputs)] a piece each (empty pieces dropped)."""
        from torch.utils._pytree import tree_flatten, tree_map
        produced = {}  # id(tensor) -> piece index
        for pi, piece in enumerate(self.pieces):
            for _, _, _, out in piece:
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor):
                        produced[id(t)] = pi
        used_later = set()  # (id) of tensors a later piece, the host or the caller reads
        for pi, piece in enumerate(self.pieces):
            for _, args, kwargs, _ in piece:
                for t in tree_flatten((args, kwargs))[0]:
                    if isinstance(t, torch.Tensor) and produced.get(id(t), pi) < pi:
                        used_later.add(id(t))
        for reads in self.host_reads:
            used_later.update(id(t) for t in reads)
        final = [t for t in tree_flatten(self.result)[0] if isinstance(t, torch.Tensor)]
        used_later.update(id(t) for t in final)
        out = []
        for pi, piece in enumerate(self.pieces):
            if not piece:
                continue
            graph = torch.fx.Graph()
            env, inputs, outputs = {}, [], []

            def arg(a):
                if not isinstance(a, torch.Tensor):
                    return a
                if id(a) not in env:
                    env[id(a)] = graph.placeholder("arg%d" % len(inputs))
                    inputs.append(a)
                return env[id(a)]

            for func, args, kwargs, res in piece:
                node = graph.call_function(func, tree_map(arg, tuple(args)), tree_map(arg, dict(kwargs)))
                if isinstance(res, torch.Tensor):
                    env[id(res)] = node
                    if id(res) in used_later and all(o is not res for o in outputs):
                        outputs.append(res)
                elif isinstance(res, (tuple, list)):
                    for i, t in enumerate(res):
                        if isinstance(t, torch.Tensor):
                            env[id(t)] = graph.call_function(operator.getitem, (node, i))
                            if id(t) in used_later and all(o is not t for o in outputs):
                                outputs.append(t)
            if not outputs:
                continue  # nothing of it is read: dead code
            graph.output(tuple(env[id(t)] for t in outputs))
            out.append((torch.fx.GraphModule(torch.nn.Module(), graph), inputs, outputs))
        return out
