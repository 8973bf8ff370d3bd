"""Graph capture: a torch.nn.Module -> a functional ATen-level FX graph whose placeholders are
the model's parameters/buffers followed by its inputs.

Two routes:
  * torch >= 2.1: torch.export.export, then run_decompositions() (functional core ATen).
  * otherwise (torch 1.13): make_fx, twice. The first trace runs with grad enabled and the
    parameters requiring grad, which keeps PyTorch's fused inference fast paths
    (aten._transformer_encoder_layer_fwd, aten._native_multi_head_attention) out of the graph
    so it holds the ops they are made of. The second trace re-traces that ATen graph through
    functorch's `functionalize`, which turns in-place ops (add_, relu_, masked_fill_) into
    out-of-place values. Functionalization therefore happens here, in Python.
"""

import inspect
from dataclasses import dataclass, field
from typing import List, Sequence

import torch


class ExportError(Exception):
    """A model or graph the frontend cannot export; the message names the node and the op."""


@dataclass
class Placeholder:
    fx_name: str  # the placeholder's name in the FX graph
    name: str  # its name in the exported graph (parameter FQN or forward() argument name)
    role: str  # "parameter" or "input"
    value: torch.Tensor
    export_name: str = ""  # `name` made unique among the graph's node names (set by convert)


@dataclass
class Capture:
    gm: torch.fx.GraphModule
    placeholders: List[Placeholder]
    method: str
    # FX names of the graph outputs that are the user's (torch.export also returns mutated buffers).
    user_outputs: List[str] = field(default_factory=list)


def _make_fx():
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx


def _functionalize():
    try:
        from torch.func import functionalize  # torch >= 2.0
    except ImportError:
        from functorch import functionalize  # torch 1.13
    return functionalize


def has_torch_export() -> bool:
    return hasattr(torch, "export") and hasattr(torch.export, "export")


def input_names(model: torch.nn.Module, n: int) -> List[str]:
    """Names for the example inputs: forward()'s positional parameter names where it has them."""
    names = []
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    names = names[:n]
    names += [f"input{i}" for i in range(len(names), n)]
    return names


def check_inputs(example_inputs) -> tuple:
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise ExportError(f"example input {i} is a {type(x).__name__}; only tensors are supported")
    return example_inputs


def _functional_call():
    try:
        from torch.func import functional_call  # torch >= 2.0
    except ImportError:
        from torch.nn.utils.stateless import functional_call  # torch 1.13
    return functional_call


def capture_make_fx(model: torch.nn.Module, example_inputs: Sequence[torch.Tensor]) -> Capture:
    functional_call = _functional_call()
    make_fx = _make_fx()
    named = list(model.named_parameters()) + list(model.named_buffers())
    names = [n for n, _ in named]
    values = [v.detach() for _, v in named]
    count = len(names)

    def run(*args):
        return functional_call(model, dict(zip(names, args[:count])), tuple(args[count:]))

    traced_params = [v.clone().requires_grad_(v.is_floating_point()) for v in values]
    with torch.enable_grad():
        aten_graph = make_fx(run)(*traced_params, *example_inputs)
    with torch.no_grad():
        gm = make_fx(_functionalize()(aten_graph))(*values, *example_inputs)
    fx_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    roles = ["parameter"] * count + ["input"] * len(example_inputs)
    export_names = names + input_names(model, len(example_inputs))
    flat = values + list(example_inputs)
    if len(fx_placeholders) != len(flat):
        raise ExportError(f"traced graph has {len(fx_placeholders)} placeholders for {len(flat)} arguments")
    placeholders = [Placeholder(p.name, n, r, v) for p, n, r, v in zip(fx_placeholders, export_names, roles, flat)]
    return Capture(gm, placeholders, "make_fx+functionalize")


def capture_torch_export(model: torch.nn.Module, example_inputs: Sequence[torch.Tensor]) -> Capture:
    """torch >= 2.1. Not exercised by this repository's tests (they run on torch 1.13).
    Grad mode is on for the same reason as in capture_make_fx: no fused fast paths."""
    with torch.enable_grad():
        ep = torch.export.export(model, tuple(example_inputs))
    ep = ep.run_decompositions()
    sig = ep.graph_signature
    to_param = dict(getattr(sig, "inputs_to_parameters", {}))
    to_param.update(getattr(sig, "inputs_to_buffers", {}))
    to_const = dict(getattr(sig, "inputs_to_lifted_tensor_constants", {}))
    constants = getattr(ep, "constants", None) or getattr(ep, "tensor_constants", {})
    state = ep.state_dict
    user_names = input_names(model, len(example_inputs))
    placeholders, user_index = [], 0
    for node in ep.graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        if node.name in to_param:
            fqn = to_param[node.name]
            value = state[fqn] if fqn in state else constants[fqn]
            placeholders.append(Placeholder(node.name, fqn, "parameter", value.detach()))
        elif node.name in to_const:
            placeholders.append(Placeholder(node.name, node.name, "parameter", constants[to_const[node.name]].detach()))
        else:
            if user_index >= len(example_inputs):
                raise ExportError(f"placeholder {node.name}: more graph inputs than example inputs")
            placeholders.append(Placeholder(node.name, user_names[user_index], "input", example_inputs[user_index]))
            user_index += 1
    return Capture(ep.graph_module, placeholders, "torch.export", list(getattr(sig, "user_outputs", [])))


def capture(model: torch.nn.Module, example_inputs, method: str = "auto") -> Capture:
    example_inputs = check_inputs(example_inputs)
    if method == "auto":
        method = "torch.export" if has_torch_export() else "make_fx"
    if method == "torch.export":
        return capture_torch_export(model, example_inputs)
    if method == "make_fx":
        return capture_make_fx(model, example_inputs)
    raise ExportError(f"unknown capture method '{method}' (auto, make_fx, torch.export)")
