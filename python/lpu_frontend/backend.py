"""A torch.compile backend: `torch.compile(model, backend=lpu_frontend.lpu_backend)`.

Dynamo hands a backend an FX GraphModule and example inputs and expects a callable back. This
one exports the graph (capture to ATen, sidecar with PyTorch's outputs) and returns the graph
module's own forward, so the program keeps running eagerly in PyTorch; the exported files are
what the workbench compiles and simulates. Files go to $LPU_EXPORT_DIR (default:
<tmp>/lpu_export) as graph_<n>.json, or wherever make_backend(out_dir) says.
"""

import itertools
import json
import os
import tempfile
from typing import Callable, List

import torch

from .export import export

exported_paths: List[str] = []  # every graph exported by a backend in this process
_counter = itertools.count()


class _ScalarsBound(torch.nn.Module):
    """A Dynamo graph with its scalar inputs fixed: the tensors stay inputs, each int, float or
    bool (a SymInt where Dynamo made the graph dynamic) becomes the constant this call passed."""

    def __init__(self, gm, example_inputs):
        super().__init__()
        self.gm = gm
        self.scalars = {i: _concrete(a) for i, a in enumerate(example_inputs) if not isinstance(a, torch.Tensor)}
        self.count = len(example_inputs)

    def forward(self, *tensors):
        it = iter(tensors)
        return self.gm(*[self.scalars[i] if i in self.scalars else next(it) for i in range(self.count)])


def _concrete(a):
    """A scalar graph input's value. int() of a SymInt asks Dynamo's shape environment, which
    records a guard: the compiled graph is then valid for this value only, and another value
    recompiles (and is simulated) rather than reusing this graph's price."""
    for kind in (bool, int, float):
        if isinstance(a, kind) or type(a).__name__ == "Sym" + kind.__name__.capitalize():
            return kind(a)
    raise TypeError(f"a graph input of type {type(a).__name__}: tensors, ints, floats and bools are supported")


def _specialise_shapes(gm):
    """Dynamo marks a dimension dynamic once it has seen it change (automatic dynamic shapes);
    the export traces this call's sizes, so each symbolic size becomes a guard on its value
    (int() asks the shape environment), and another size recompiles and is simulated anew."""
    for node in gm.graph.nodes:
        value = node.meta.get("example_value") if node.op == "placeholder" else None
        if isinstance(value, torch.Tensor):
            for d in list(value.shape) + list(value.stride()):
                if not isinstance(d, int):
                    int(d)


def export_dynamo_graph(gm: torch.fx.GraphModule, example_inputs, path: str, method: str = "make_fx"):
    """export() of a graph Dynamo handed a backend; returns (Exported, input names per argument:
    None for a scalar argument, which the export baked in)."""
    example_inputs = list(example_inputs)
    _specialise_shapes(gm)
    tensors = [a for a in example_inputs if isinstance(a, torch.Tensor)]
    if len(tensors) == len(example_inputs):
        e = export(gm, tuple(example_inputs), path, method=method)
        return e, list(e.inputs)
    e = export(_ScalarsBound(gm, example_inputs), tuple(tensors), path, method=method)
    names = iter(e.inputs)
    return e, [next(names) if isinstance(a, torch.Tensor) else None for a in example_inputs]


def make_backend(out_dir: str, prefix: str = "graph", method: str = "make_fx") -> Callable:
    """A backend writing <out_dir>/<prefix>_<n>.json. Dynamo graphs are re-traced with make_fx
    by default (their parameters are the graph module's own)."""

    def backend(gm: torch.fx.GraphModule, example_inputs):
        path = os.path.join(out_dir, f"{prefix}_{next(_counter)}.json")
        export_dynamo_graph(gm, example_inputs, path, method=method)
        exported_paths.append(path)
        return gm.forward

    return backend


def lpu_backend(gm: torch.fx.GraphModule, example_inputs):
    out_dir = os.environ.get("LPU_EXPORT_DIR") or os.path.join(tempfile.gettempdir(), "lpu_export")
    return make_backend(out_dir)(gm, example_inputs)


MANIFEST_FORMAT = "lpu-manifest"
MANIFEST_VERSION = 1


class ManifestRecorder:
    """A torch.compile backend that also records how Dynamo's graphs connect, for
    `lpu run MANIFEST` (docs/graph-format.md, "Manifests").

        rec = ManifestRecorder("out/prog")
        compiled = torch.compile(model, backend=rec.backend)
        rec.run(compiled, x)            # one call: compiles, and traces what flows where
        rec.write()                     # out/prog/manifest.json + graph_<n>.json/.bin

    Dynamo cuts the program at graph breaks (a data-dependent `.item()`, print, an unsupported
    call); what runs between two graphs is Python on the host. While `run` executes, every
    graph call's argument and result tensors are matched by identity against the user inputs,
    the model's parameters and earlier graphs' results: an argument that is none of these was
    made on the host; a result that no later graph takes and that is not returned was read by
    the host (the value a break branches on). The manifest lists, per graph, where each input
    comes from and where each output goes."""

    def __init__(self, out_dir: str, model: torch.nn.Module = None, method: str = "make_fx"):
        self.out_dir = out_dir
        self.model = model
        self.method = method
        self.graphs = []  # {"name", "file", "inputs": [export names or None]}
        self.calls = []  # (graph index, args, flat results) in execution order
        self.user_inputs = ()
        self.result = None

    def backend(self, gm: torch.fx.GraphModule, example_inputs):
        index = len(self.graphs)
        name = f"graph_{index}"
        e, inputs = export_dynamo_graph(gm, example_inputs, os.path.join(self.out_dir, name + ".json"), self.method)
        with open(e.json_path, encoding="utf-8") as f:
            present = {n["name"] for n in json.load(f)["nodes"] if n["kind"] == "placeholder"}
        self.graphs.append({"name": name, "file": name + ".json",
                            "inputs": [n if n in present else None for n in inputs]})
        forward = gm.forward

        def call(*args):
            out = forward(*args)
            flat = out if isinstance(out, (list, tuple)) else [out]
            self.calls.append((index, list(args), list(flat)))
            return out

        return call

    def run(self, compiled, *inputs):
        self.user_inputs = inputs
        self.result = compiled(*inputs)
        return self.result

    def write(self, path: str = None) -> str:
        params = {}
        if self.model is not None:
            params = {id(p): n for n, p in list(self.model.named_parameters()) + list(self.model.named_buffers())}
        produced = {}  # id(tensor) -> (graph, output index)
        consumed = set()
        graphs = [{"name": g["name"], "file": g["file"], "inputs": [], "outputs": []} for g in self.graphs]
        # The manifest lists the call's graphs in execution order and refers to them by that
        # position (after a recompilation the call's graphs are not the first ones compiled).
        position = {gi: pos for pos, (gi, _, _) in enumerate(self.calls)}
        seen = set()
        for gi, args, results in self.calls:
            if gi in seen:
                raise ValueError(f"graph {gi} ran twice in one call: record one call only")
            seen.add(gi)
            names = self.graphs[gi]["inputs"]
            for ai, a in enumerate(args):
                if ai >= len(names) or names[ai] is None:
                    continue
                entry = {"name": names[ai]}
                if any(a is u for u in self.user_inputs):
                    entry.update({"from": "input", "index": next(i for i, u in enumerate(self.user_inputs) if a is u)})
                elif id(a) in produced:
                    src = produced[id(a)]
                    consumed.add(src)
                    entry.update({"from": "graph", "graph": position[src[0]], "output": src[1]})
                elif id(a) in params:
                    entry.update({"from": "parameter", "parameter": params[id(a)]})
                elif isinstance(a, torch.nn.Parameter):
                    entry.update({"from": "parameter"})
                else:
                    entry.update({"from": "host"})
                graphs[gi]["inputs"].append(entry)
            for oi, r in enumerate(results):
                produced[id(r)] = (gi, oi)
        final = self.result if isinstance(self.result, (list, tuple)) else [self.result]
        outputs, returned = [], set()
        for r in final:
            if isinstance(r, torch.Tensor) and id(r) in produced:
                returned.add(produced[id(r)])
                outputs.append({"graph": position[produced[id(r)][0]], "output": produced[id(r)][1]})
            else:
                outputs.append({"from": "host"})
        for gi, args, results in self.calls:
            for oi, _ in enumerate(results):
                to = "graph" if (gi, oi) in consumed else "output" if (gi, oi) in returned else "host"
                graphs[gi]["outputs"].append({"index": oi, "to": to})
        manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "name": "program",
                    "meta": {"producer": "lpu_frontend", "torch": torch.__version__, "capture": "torch.compile"},
                    "graphs": [graphs[gi] for gi, _, _ in self.calls], "outputs": outputs}
        path = path or os.path.join(self.out_dir, "manifest.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(manifest, indent=2) + "\n")
        return path
