"""export(): capture, run eagerly for PyTorch's outputs, write graph JSON + binary sidecar.

The JSON is written in the canonical layout the C++ side prints (compiler/io/graph_json.cpp:
one node / array per line, fixed key order), so `lpu` re-printing it gives the same text.
"""

import json
import os
import re
from dataclasses import dataclass, field
from typing import List

import torch
from torch.utils._pytree import tree_flatten

from .capture import ExportError, capture, check_inputs, input_names
from .convert import Array, convert, dtype_name

FORMAT_VERSION = 1
ALIGNMENT = 64  # every array starts on a 64-byte boundary

# numpy little-endian layouts per dtype (bf16 travels as its raw 16 bits).
LE = {
    torch.float32: "<f4",
    torch.float16: "<f2",
    torch.int64: "<i8",
    torch.int32: "<i4",
    torch.bool: "u1",
}


@dataclass
class Exported:
    json_path: str
    bin_path: str
    ops: List[str]  # the distinct ATen ops in the graph
    nodes: int
    inputs: List[str] = field(default_factory=list)  # graph names of the user inputs, in order


def array_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(LE[t.dtype]).tobytes()


def dumps(obj) -> str:
    return json.dumps(obj, separators=(", ", ": "), ensure_ascii=False)


def write_files(json_path: str, name: str, meta: dict, nodes, outputs, arrays: List[Array],
                write_arrays: bool = True) -> str:
    """write_arrays=False writes the index with the offsets the arrays would have and a sidecar
    of the right size with nothing in it (a sparse file): for graphs whose weights are never
    read, timing runs of a 7B-parameter model for instance."""
    folder = os.path.dirname(os.path.abspath(json_path))
    os.makedirs(folder, exist_ok=True)
    bin_name = os.path.splitext(os.path.basename(json_path))[0] + ".bin"
    bin_path = os.path.join(folder, bin_name)
    index = []
    with open(bin_path, "wb") as f:
        offset = 0
        for a in arrays:
            pad = (-offset) % ALIGNMENT
            if write_arrays:
                f.write(b"\0" * pad)
            offset += pad
            index.append({"name": a.name, "role": a.role, "dtype": dtype_name(a.tensor.dtype, f"array {a.name}"),
                          "shape": [int(s) for s in a.tensor.shape], "file": bin_name, "offset": offset})
            if write_arrays:
                data = array_bytes(a.tensor)
                f.write(data)
                offset += len(data)
            else:
                offset += a.tensor.numel() * a.tensor.element_size()
        if not write_arrays:
            f.truncate(offset)
    lines = ["{", '  "format": "lpu-graph",', f'  "version": {FORMAT_VERSION},', f'  "name": {dumps(name)},']
    if meta:
        lines.append(f'  "meta": {dumps(meta)},')
    lines.append('  "nodes": [' + ("" if nodes else "],"))
    lines += [f"    {dumps(n)}," for n in nodes]
    if nodes:
        lines[-1] = lines[-1][:-1]
        lines.append("  ],")
    lines.append(f'  "outputs": {dumps(outputs)},')
    lines.append('  "tensors": [' + ("" if index else "]"))
    lines += [f"    {dumps(e)}," for e in index]
    if index:
        lines[-1] = lines[-1][:-1]
        lines.append("  ]")
    lines.append("}")
    with open(json_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return bin_path


class KeywordCall(torch.nn.Module):
    """Calls `model(*positional, **keywords)` from positional tensors only, which is what the
    capture routes take. forward() is generated with the inputs' own names as its parameters
    (so graph inputs are named after them, and no *args reaches torch.export). The wrapped
    model is registered as `model`; export strips that prefix from parameter names again."""

    def __init__(self, model: torch.nn.Module, positional: List[str], keys: List[str]):
        super().__init__()
        self.model = model
        for n in positional + keys:
            if not n.isidentifier():
                raise ExportError(f"keyword input '{n}' is not a Python identifier")
        call = ", ".join(positional + [f"{k}={k}" for k in keys])
        scope = {}
        exec(f"def forward(self, {', '.join(positional + keys)}):\n    return self.model({call})\n", scope)
        self.forward = scope["forward"].__get__(self)


def eager_outputs(model, example_inputs) -> List[torch.Tensor]:
    with torch.no_grad():
        out = model(*example_inputs)
    flat, _ = tree_flatten(out)
    for i, t in enumerate(flat):
        if not isinstance(t, torch.Tensor):
            raise ExportError(f"model output {i} is a {type(t).__name__}; only tensor outputs are supported")
    return [t.detach() for t in flat]


def export(model: torch.nn.Module, example_inputs, path: str, *, name: str = None, method: str = "auto",
           kwargs: dict = None, ignore_mutations: str = "", write_arrays: bool = True, grad=None) -> Exported:
    """Exports `model` applied to `example_inputs` (and keyword tensors `kwargs`) to `path`
    (graph JSON) and its sidecar (same stem, .bin): weights, the example inputs and the eager
    outputs of the model.

    method: "auto" (torch.export when this torch has it, else make_fx), "make_fx", "torch.export".
    kwargs: keyword tensor inputs (HuggingFace's `input_ids=..., cache_position=...`); they become
      graph inputs named after their keys, after the positional ones.
    Buffers the model writes (a static KV cache) become graph inputs, and their writes extra
    outputs after the model's own (the rows written, for index_copy_-style cache updates; see
    convert.Converter.buffer_writes); `ignore_mutations` is a regex of buffer names whose writes
    are not exported (bookkeeping such as HuggingFace's `cumulative_length`).
    grad: torch.export's grad mode (None: auto, see capture._decomposed_export; False for
      modules that write buffers, as transformers' export recipe does).
    write_arrays=False: the sidecar is left empty (sparse) and the model is not run eagerly;
      the graph is for timing runs only (see write_files).
    Raises ExportError naming the node for anything the format cannot carry.
    """
    positional = check_inputs(example_inputs) if example_inputs is not None else ()
    names = None
    if kwargs:
        keyword = check_inputs(tuple(kwargs.values()))
        names = input_names(model, len(positional)) + list(kwargs)
        model = KeywordCall(model, names[:len(positional)], list(kwargs))
        example_inputs = tuple(positional) + tuple(keyword)
    cap = capture(model, example_inputs, method, grad)
    cap.ignore_mutations = ignore_mutations
    if names is not None:  # undo the KeywordCall wrapper in the names
        users = iter(names)
        for p in cap.placeholders:
            if p.role == "input" and not p.state:
                p.name = next(users)
            elif p.name.startswith("model."):
                p.name = p.name[len("model."):]
        cap.mutations = {k: v[len("model."):] if v.startswith("model.") else v for k, v in cap.mutations.items()}
    conv = convert(cap)
    inputs = [p.value for p in cap.placeholders if p.role == "input" and not p.state]
    writes = conv.output_values[len(conv.outputs) - len(conv.cache_writes):]
    if write_arrays:
        expected = eager_outputs(model, inputs)
    else:
        expected = conv.output_values[:len(conv.outputs) - len(conv.cache_writes)]
    if len(expected) + len(writes) != len(conv.outputs):
        raise ExportError(f"the graph has {len(conv.outputs) - len(writes)} outputs, the model returned {len(expected)}")
    # Buffer writes are checked against the traced graph's own values (PyTorch ran it).
    expected = expected + [w.detach() for w in writes]
    for i, (e, g) in enumerate(zip(expected, conv.output_values)):
        if e.dtype != g.dtype or e.shape != g.shape:
            raise ExportError(f"output {i}: eager {e.dtype}{list(e.shape)} vs traced {g.dtype}{list(g.shape)}")
    arrays = conv.arrays + [Array(f"output{i}", "expected", e) for i, e in enumerate(expected)]
    # Arrays in the order the index lists them: weights, inputs, expected outputs.
    order = {"parameter": 0, "input": 1, "expected": 2}
    arrays.sort(key=lambda a: order[a.role])
    graph_name = name or re.sub(r"[^A-Za-z0-9_.]", "_", os.path.splitext(os.path.basename(path))[0])
    inner = model.model if isinstance(model, KeywordCall) else model
    meta = {"producer": "lpu_frontend", "torch": torch.__version__, "capture": cap.method,
            "model": type(inner).__name__}
    if not cap.grad:
        meta["grad"] = False
    if conv.cache_writes:
        meta["buffer_writes"] = conv.cache_writes
    if ignore_mutations:
        meta["ignored_buffer_writes"] = ignore_mutations
    if not write_arrays:
        meta["sidecar"] = "empty (timing only)"
    bin_path = write_files(path, graph_name, meta, conv.nodes, conv.outputs, arrays, write_arrays)
    ops = sorted({n["op"] for n in conv.nodes if n["kind"] == "call"})
    user_inputs = [p.export_name for p in cap.placeholders if p.role == "input" and not p.state]
    return Exported(path, bin_path, ops, len(conv.nodes), user_inputs)
