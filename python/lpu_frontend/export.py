"""export(): capture, run eagerly for PyTorch's outputs, write graph JSON + binary sidecar.

The JSON is written in the canonical layout the C++ side prints (compiler/io/graph_json.cpp:
one node / array per line, fixed key order), so `lpu` re-printing it gives the same text.
"""

import json
import os
import re
from dataclasses import dataclass
from typing import List

import torch
from torch.utils._pytree import tree_flatten

from .capture import ExportError, capture
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


def array_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(LE[t.dtype]).tobytes()


def dumps(obj) -> str:
    return json.dumps(obj, separators=(", ", ": "), ensure_ascii=False)


def write_files(json_path: str, name: str, meta: dict, nodes, outputs, arrays: List[Array]) -> str:
    folder = os.path.dirname(os.path.abspath(json_path))
    os.makedirs(folder, exist_ok=True)
    bin_name = os.path.splitext(os.path.basename(json_path))[0] + ".bin"
    bin_path = os.path.join(folder, bin_name)
    index = []
    with open(bin_path, "wb") as f:
        offset = 0
        for a in arrays:
            pad = (-offset) % ALIGNMENT
            f.write(b"\0" * pad)
            offset += pad
            data = array_bytes(a.tensor)
            index.append({"name": a.name, "role": a.role, "dtype": dtype_name(a.tensor.dtype, f"array {a.name}"),
                          "shape": [int(s) for s in a.tensor.shape], "file": bin_name, "offset": offset})
            f.write(data)
            offset += len(data)
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


def eager_outputs(model, example_inputs) -> List[torch.Tensor]:
    with torch.no_grad():
        out = model(*example_inputs)
    flat, _ = tree_flatten(out)
    for i, t in enumerate(flat):
        if not isinstance(t, torch.Tensor):
            raise ExportError(f"model output {i} is a {type(t).__name__}; only tensor outputs are supported")
    return [t.detach() for t in flat]


def export(model: torch.nn.Module, example_inputs, path: str, *, name: str = None, method: str = "auto") -> Exported:
    """Exports `model` applied to `example_inputs` to `path` (graph JSON) and its sidecar
    (same stem, .bin): weights, the example inputs and the eager outputs of the model.

    method: "auto" (torch.export when this torch has it, else make_fx), "make_fx", "torch.export".
    Raises ExportError naming the node for anything the format cannot carry.
    """
    cap = capture(model, example_inputs, method)
    conv = convert(cap)
    inputs = [p.value for p in cap.placeholders if p.role == "input"]
    expected = eager_outputs(model, inputs)
    if len(expected) != len(conv.outputs):
        raise ExportError(f"the graph has {len(conv.outputs)} outputs, the model returned {len(expected)}")
    for i, (e, g) in enumerate(zip(expected, conv.output_values)):
        if e.dtype != g.dtype or e.shape != g.shape:
            raise ExportError(f"output {i}: eager {e.dtype}{list(e.shape)} vs traced {g.dtype}{list(g.shape)}")
    arrays = conv.arrays + [Array(f"output{i}", "expected", e) for i, e in enumerate(expected)]
    # Arrays in the order the index lists them: weights, inputs, expected outputs.
    order = {"parameter": 0, "input": 1, "expected": 2}
    arrays.sort(key=lambda a: order[a.role])
    graph_name = name or re.sub(r"[^A-Za-z0-9_.]", "_", os.path.splitext(os.path.basename(path))[0])
    meta = {"producer": "lpu_frontend", "torch": torch.__version__, "capture": cap.method,
            "model": type(model).__name__}
    bin_path = write_files(path, graph_name, meta, conv.nodes, conv.outputs, arrays)
    ops = sorted({n["op"] for n in conv.nodes if n["kind"] == "call"})
    return Exported(path, bin_path, ops, len(conv.nodes))
