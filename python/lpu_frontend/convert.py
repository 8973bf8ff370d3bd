"""FX graph (functional ATen) -> the nodes of the workbench's graph format.

Conventions (mirrored by compiler/graph/aten.h on the C++ side):
  * a call node's op is "aten." + the overload packet name (add.Tensor and add.Scalar -> aten.add);
  * its inputs are the tensor arguments in schema order (tensor lists flattened, None skipped);
  * every other argument given in the FX node becomes an attribute named after the schema
    argument (defaults are not written; the C++ side knows ATen's defaults); a Python number
    given for a Tensor argument (x * 0.5) is an attribute too;
  * an op with several results (split, native_layer_norm) becomes one node per result used,
    with attribute `result` = the getitem index, named after the getitem node.
Constant subgraphs (torch.ones/triu/arange/sin/cos of constants, lifted tensor constants)
are evaluated here and exported as parameters with {constant = true}; a constant whose
elements are all equal also gets {splat = value}, which the C++ constant folding turns into a
`full`. Every node records the dtype and shape PyTorch computed; the C++ type inference must
agree (verify).
"""

import math
import operator
import re
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import torch
import torch.fx
from torch.utils._pytree import tree_flatten

from .capture import Capture, ExportError

DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.bool: "bool",
}

# Factory-like ops whose first tensor argument only supplies a shape: constant when their
# other inputs are (fill.Tensor's value; the rest have none).
SHAPE_ONLY_FIRST = {"zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "fill"}
# Ops whose value must not be computed once at export time.
RANDOM = re.compile(r"rand|bernoulli|normal|uniform|multinomial|dropout|exponential|cauchy|geometric")
# Arguments that never change values.
IGNORED_ARGS = {"device", "layout", "pin_memory", "non_blocking", "memory_format"}


@dataclass
class Array:
    name: str
    role: str  # "parameter", "input" or "expected"
    tensor: torch.Tensor


@dataclass
class Converted:
    nodes: List[dict] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    arrays: List[Array] = field(default_factory=list)
    output_values: List[torch.Tensor] = field(default_factory=list)
    # Buffer writes exported as outputs after the user's: {"output", "buffer", "op", ...}.
    cache_writes: List[dict] = field(default_factory=list)


# How a buffer write is recognised as a cache write: op -> (position of the written buffer,
# position of the values written, extra argument positions recorded in the manifest of writes).
CACHE_WRITE_OPS = {
    "aten.index_copy": (0, 3, {"dim": 1}),
    "aten.index_put": (0, 2, {}),
    "aten.slice_scatter": (0, 1, {"dim": 2}),
    "aten.select_scatter": (0, 1, {"dim": 2}),
}


def dtype_name(t: torch.dtype, where: str) -> str:
    if t not in DTYPES:
        raise ExportError(f"{where}: dtype {t} is not supported (f32, f16, bf16, i64, i32, bool)")
    return DTYPES[t]


def encode_float(v: float):
    """JSON has no inf/nan: they travel as {"float": "inf" | "-inf" | "nan"}."""
    if math.isfinite(v):
        return float(v)
    return {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}


def op_name(target) -> str:
    if isinstance(target, torch._ops.OpOverload):
        ns = target.namespace if hasattr(target, "namespace") else target.__module__.split(".")[-1]
        return f"{ns}.{target.overloadpacket.__name__}"
    return getattr(target, "__name__", str(target))


def record_values(gm: torch.fx.GraphModule, args) -> Dict[torch.fx.Node, object]:
    """Runs the graph on the real arguments, keeping every node's value."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            values[n] = super().run_node(n)
            return values[n]

    with torch.no_grad():
        Recorder(gm).run(*args)
    return values


class Converter:
    def __init__(self, cap: Capture):
        self.cap = cap
        self.gm = cap.gm
        # Runtime inputs are cloned: a graph writing its inputs back (copy_) would change them.
        self.values = record_values(self.gm, [p.value.clone() if p.role == "input" else p.value
                                              for p in cap.placeholders])
        self.names: Dict[torch.fx.Node, str] = {}
        self.used_names = set()
        self.out = Converted()
        self.names_by_key = {}  # shared constants made by the converter (row_write positions)

    # ---- naming ------------------------------------------------------------------------------

    def unique(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.]", "_", base) or "v"
        cand, k = name, 0
        while cand in self.used_names:
            k += 1
            cand = f"{name}_{k}"
        self.used_names.add(cand)
        return cand

    # ---- constant analysis -------------------------------------------------------------------

    def is_weight_attr(self, node) -> bool:
        return node.op == "get_attr" and isinstance(self.attr(node), torch.nn.Parameter)

    def attr(self, node):
        obj = self.gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        return obj

    def constant_nodes(self):
        const = {}
        for node in self.gm.graph.nodes:
            if node.op == "placeholder" or node.op == "output":
                const[node] = False
            elif node.op == "get_attr":
                const[node] = not self.is_weight_attr(node)
            else:
                name = op_name(node.target)
                if RANDOM.search(name):
                    const[node] = False
                elif name.split(".")[-1] in SHAPE_ONLY_FIRST and node.args:
                    first = node.args[0]
                    const[node] = all(const[i] for i in node.all_input_nodes if i is not first)
                else:
                    const[node] = all(const[i] for i in node.all_input_nodes)
        return const

    # ---- arguments ---------------------------------------------------------------------------

    def where(self, node) -> str:
        return f"node %{node.name} ({op_name(node.target)})"

    def encode_arg(self, node, arg_name, v, inputs, attrs):
        where = self.where(node)
        if isinstance(v, torch.fx.Node):
            inputs.append(self.ref(v, node))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, torch.fx.Node) for x in v):
            inputs.extend(self.ref(x, node) for x in v)
        elif isinstance(v, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in v):
            # Tensor?[] with None entries (x[:, idx]): the present tensors become inputs and
            # `indexed_dims` says which dims they index (the C++ side: aten.index / index_put).
            if not all(x is None or isinstance(x, torch.fx.Node) for x in v):
                raise ExportError(f"{where}: argument '{arg_name}' mixes tensors and other values")
            inputs.extend(self.ref(x, node) for x in v if x is not None)
            attrs["indexed_dims"] = [i for i, x in enumerate(v) if x is not None]
        elif v is None or arg_name in IGNORED_ARGS:
            pass
        elif isinstance(v, bool):
            attrs[arg_name] = v
        elif isinstance(v, int):
            attrs[arg_name] = int(v)
        elif isinstance(v, float):
            attrs[arg_name] = encode_float(v)
        elif isinstance(v, str):
            attrs[arg_name] = v
        elif isinstance(v, torch.dtype):
            attrs[arg_name] = dtype_name(v, where)
        elif isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            attrs[arg_name] = [int(x) for x in v]
        else:
            raise ExportError(f"{where}: argument '{arg_name}' = {v!r} cannot be exported")

    def bind(self, node) -> Tuple[List[str], dict]:
        """Schema-ordered tensor inputs and attributes of an ATen call node."""
        schema = node.target._schema
        args, kwargs = list(node.args), dict(node.kwargs)
        inputs, attrs = [], {}
        given = []  # (schema argument, value) for every argument the node spells out
        position = 0
        for a in schema.arguments:
            if not a.kwarg_only and position < len(args):
                given.append((a, args[position]))
                position += 1
            elif a.name in kwargs:
                given.append((a, kwargs[a.name]))
        if position < len(args):
            raise ExportError(f"{self.where(node)}: {len(args)} positional arguments for {schema}")
        for a, v in given:
            self.encode_arg(node, a.name, v, inputs, attrs)
        # A None optional tensor followed by a present one would shift the input positions.
        seen_none = False
        for a, v in given:
            if "Tensor" not in str(a.type):
                continue
            if v is None:
                seen_none = True
            elif isinstance(v, torch.fx.Node) and seen_none:
                raise ExportError(f"{self.where(node)}: an absent optional tensor before '{a.name}' is not supported")
        return inputs, dict(sorted(attrs.items()))

    def ref(self, v: torch.fx.Node, user) -> str:
        if v not in self.names:
            raise ExportError(f"{self.where(user)}: input %{v.name} was not exported (a multi-result value used whole?)")
        return self.names[v]

    # ---- emission ----------------------------------------------------------------------------

    def typed(self, d: dict, value, where: str) -> dict:
        if not isinstance(value, torch.Tensor):
            raise ExportError(f"{where}: produces a {type(value).__name__}, not a tensor")
        d["dtype"] = dtype_name(value.dtype, where)
        d["shape"] = [int(s) for s in value.shape]
        return d

    def emit_constant(self, node, value, weight=False):
        name = self.unique(node.target if node.op == "get_attr" else node.name)
        self.names[node] = name
        d = {"name": name, "kind": "parameter"}
        if not weight:
            attrs = {"constant": True}
            flat = value.reshape(-1)
            if flat.numel() > 0 and not torch.isnan(flat[0]).item() and bool((flat == flat[0]).all()):
                attrs["splat"] = encode_float(float(flat[0].item()))
            d["attrs"] = attrs
        self.out.nodes.append(self.typed(d, value, f"constant %{node.name}"))
        self.out.arrays.append(Array(name, "parameter", value.detach()))

    def emit_call(self, node, name, inputs, attrs, op):
        d = {"name": name, "kind": "call", "op": op, "inputs": inputs}
        if attrs:
            d["attrs"] = attrs
        self.out.nodes.append(self.typed(d, self.values[node], self.where(node)))

    def run(self) -> Converted:
        graph = self.gm.graph
        const = self.constant_nodes()
        output_node = next(n for n in graph.nodes if n.op == "output")
        outs, _ = tree_flatten(output_node.args[0])
        writes = self.buffer_writes(outs)
        if self.cap.user_outputs:
            outs = [o for o in outs if isinstance(o, torch.fx.Node) and o.name in self.cap.user_outputs]
        elif self.cap.mutations:
            outs = [o for o in outs if not (isinstance(o, torch.fx.Node) and o.name in self.cap.mutations)]
        user_count = len(outs)
        outs = outs + [w for w, _ in writes]
        # Needed nodes: reachable from the outputs, stopping at constants (they become leaves).
        needed, stack = set(), [o for o in outs if isinstance(o, torch.fx.Node)]
        while stack:
            n = stack.pop()
            if n in needed:
                continue
            needed.add(n)
            if not const[n]:
                stack.extend(n.all_input_nodes)

        by_fx_name = {p.fx_name: p for p in self.cap.placeholders}
        for p in self.cap.placeholders:  # placeholder names first: they are the user-facing ones
            p.export_name = self.unique(p.name)
        for node in graph.nodes:
            if node not in needed:
                continue
            value = self.values[node]
            if node.op == "placeholder":
                p = by_fx_name[node.name]
                self.names[node] = p.export_name
                kind = "parameter" if p.role == "parameter" else "placeholder"
                self.out.nodes.append(self.typed({"name": p.export_name, "kind": kind}, value, f"input %{p.name}"))
                self.out.arrays.append(Array(p.export_name, p.role, p.value.detach()))
            elif const[node]:
                self.emit_constant(node, value)
            elif node.op == "get_attr":
                self.emit_constant(node, value, weight=True)
            elif node.op == "call_function" and node.target is operator.getitem:
                parent, index = node.args
                if not isinstance(parent.target, torch._ops.OpOverload):
                    raise ExportError(f"node %{node.name}: getitem of %{parent.name}, which is not an ATen op")
                inputs, attrs = self.bind(parent)
                attrs = dict(sorted({**attrs, "result": int(index)}.items()))
                self.names[node] = self.unique(node.name)
                self.emit_call(node, self.names[node], inputs, attrs, op_name(parent.target))
            elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) \
                    and self.row_write(node):
                pass  # emitted as a select (see row_write)
            elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                if isinstance(value, (tuple, list)):
                    continue  # a multi-result op: its getitem nodes are emitted instead
                inputs, attrs = self.bind(node)
                self.names[node] = self.unique(node.name)
                self.emit_call(node, self.names[node], inputs, attrs, op_name(node.target))
            else:
                raise ExportError(f"node %{node.name}: {node.op} {op_name(node.target)} is not an ATen op call")

        for o in outs:
            if not isinstance(o, torch.fx.Node):
                raise ExportError(f"graph output {o!r} is not a tensor computed by the graph")
            self.out.outputs.append(self.names[o])
            self.out.output_values.append(self.values[o])
        for i, (_, info) in enumerate(writes):
            self.out.cache_writes.append({"output": user_count + i, **info})
        return self.out

    def row_write(self, node) -> bool:
        """A write of one row into a tensor at a runtime position (index_copy, or index_put
        with one index tensor: the static KV cache update of a decode step) becomes
        where(positions == index, rows, tensor), with `positions` a constant arange along the
        written dim. That is pointwise: the kernel that reads the updated cache fuses it and
        reads the old cache once, with the new row substituted, instead of a scatter that
        materialises a second cache. Returns False (emit the op as is) for anything else."""
        op = op_name(node.target)
        args = list(node.args)
        if op == "aten.index_copy" and len(args) >= 4:
            base, dim, index, src = args[:4]
        elif op == "aten.index_put" and len(args) >= 3 and isinstance(args[1], (list, tuple)):
            accumulate = args[3] if len(args) > 3 else node.kwargs.get("accumulate", False)
            present = [i for i, x in enumerate(args[1]) if x is not None]
            if accumulate or len(present) != 1:
                return False
            base, dim, index, src = args[0], present[0], args[1][present[0]], args[2]
        else:
            return False
        if not all(isinstance(x, torch.fx.Node) for x in (base, index, src)) or not isinstance(dim, int):
            return False
        bv, iv, sv = self.values[base], self.values[index], self.values[src]
        if not all(isinstance(v, torch.Tensor) for v in (bv, iv, sv)) or bv.dim() == 0:
            return False
        dim %= bv.dim()
        row = list(bv.shape)
        row[dim] = 1
        if iv.numel() != 1 or iv.dim() > 1 or iv.dtype not in (torch.int64, torch.int32) or sv.dtype != bv.dtype \
                or sv.dim() > bv.dim() or list(torch.broadcast_shapes(tuple(sv.shape), tuple(row))) != row:
            return False
        shape = [1] * bv.dim()
        shape[dim] = bv.shape[dim]
        key = ("positions", tuple(shape), iv.dtype)
        if key not in self.names_by_key:
            positions = torch.arange(bv.shape[dim], dtype=iv.dtype, device=iv.device).reshape(shape)  # a GPU export too
            name = self.unique(f"positions_{bv.shape[dim]}_dim{dim}")
            self.out.nodes.append(self.typed({"name": name, "kind": "parameter", "attrs": {"constant": True}},
                                             positions, f"constant {name}"))
            self.out.arrays.append(Array(name, "parameter", positions))
            self.names_by_key[key] = (name, positions)
        pos_name, positions = self.names_by_key[key]
        mask = torch.eq(positions, iv)
        at = self.unique(node.name + "_at")
        self.out.nodes.append(self.typed({"name": at, "kind": "call", "op": "aten.eq",
                                          "inputs": [pos_name, self.ref(index, node)]}, mask, self.where(node)))
        self.names[node] = self.unique(node.name)
        d = {"name": self.names[node], "kind": "call", "op": "aten.where",
             "inputs": [at, self.ref(src, node), self.ref(base, node)]}
        self.out.nodes.append(self.typed(d, self.values[node], self.where(node)))
        return True

    def buffer_writes(self, outs):
        """The buffers the model writes, as (node whose value is written, description).

        A write of a few rows into a buffer (index_copy_ of new keys into a static KV cache) is
        exported as the rows written: the graph output is the source of the write, which is
        what a decode step must store, not a copy of the whole cache. Any other write exports
        the buffer's new value whole. Buffers matching `ignore_mutations` (bookkeeping such as
        a cache's length counter) are not exported."""
        placeholders = {n.name: n for n in self.gm.graph.nodes if n.op == "placeholder"}
        fqn_node = {p.name: placeholders.get(p.fx_name) for p in self.cap.placeholders}
        by_name = {n.name: n for n in self.gm.graph.nodes}
        writes = []
        for out_name, fqn in self.cap.mutations.items():
            if self.cap.ignore_mutations and re.search(self.cap.ignore_mutations, fqn):
                continue
            node = by_name.get(out_name)
            if node is None:
                raise ExportError(f"buffer {fqn}: its new value %{out_name} is not in the graph")
            op = op_name(node.target) if node.op == "call_function" else ""
            rule = CACHE_WRITE_OPS.get(op)
            if rule and len(node.args) > rule[1] and node.args[rule[0]] is fqn_node.get(fqn) \
                    and isinstance(node.args[rule[1]], torch.fx.Node) \
                    and not (op == "aten.index_put" and len(node.args) > 3 and node.args[3]):
                info = {"buffer": fqn, "op": op, "rows": True}
                info.update({k: int(node.args[i]) for k, i in rule[2].items() if len(node.args) > i})
                writes.append((node.args[rule[1]], info))
            else:
                writes.append((node, {"buffer": fqn, "op": op or node.op, "rows": False}))
        return writes


def convert(cap: Capture) -> Converted:
    return Converter(cap).run()
