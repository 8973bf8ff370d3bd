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
from typing import Dict, List, Sequence

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
    state: bool = False  # a buffer the model writes (KV cache): a runtime input, not a user input


@dataclass
class Capture:
    gm: torch.fx.GraphModule
    placeholders: List[Placeholder]
    method: str
    # FX names of the graph outputs that are the user's (torch.export also returns mutated buffers).
    user_outputs: List[str] = field(default_factory=list)
    # Buffers the model writes (a KV cache): FX name of the output holding the new value -> the
    # buffer's FQN, in output order. Only the torch.export route reports them.
    mutations: Dict[str, str] = field(default_factory=dict)
    ignore_mutations: str = ""  # regex of buffer FQNs whose writes are not exported
    grad: bool = True  # whether the capture ran with grad enabled (see capture_torch_export)


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

    n_params = len(list(model.named_parameters()))
    # Parameters require grad (see above); buffers do not: a model may write them (a KV cache).
    traced_params = [v.clone().requires_grad_(v.is_floating_point() and i < n_params) for i, v in enumerate(values)]
    with torch.enable_grad():
        aten_graph = make_fx(run)(*traced_params, *example_inputs)
    with torch.no_grad():
        # Buffers are cloned: a traced write into one (copy_) happens for real while tracing.
        gm = make_fx(_functionalize()(aten_graph))(*values[:n_params], *[v.clone() for v in values[n_params:]],
                                                  *example_inputs)
    fx_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    # functionalize writes a mutated argument back with a trailing copy_(arg, new_value): those
    # of parameters/buffers are the model's buffer writes (a KV cache).
    mutations = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and getattr(n.target, "__name__", "") == "copy_.default" \
                and n.args and n.args[0] in fx_placeholders[:count] and isinstance(n.args[1], torch.fx.Node):
            mutations[n.args[1].name] = names[fx_placeholders.index(n.args[0])]
    roles = ["input" if n in mutations.values() else "parameter" for n in names] + ["input"] * len(example_inputs)
    values = [v.clone() if n in mutations.values() else v for n, v in zip(names, values)]
    export_names = names + input_names(model, len(example_inputs))
    flat = values + list(example_inputs)
    if len(fx_placeholders) != len(flat):
        raise ExportError(f"traced graph has {len(fx_placeholders)} placeholders for {len(flat)} arguments")
    placeholders = [Placeholder(p.name, n, r, v, state=n in mutations.values())
                    for p, n, r, v in zip(fx_placeholders, export_names, roles, flat)]
    return Capture(gm, placeholders, "make_fx+functionalize", mutations=mutations)


def _torch_export(model: torch.nn.Module, example_inputs, grad: bool, strict: bool = False):
    """Exports and decomposes. Without grad, nothing may require grad either while tracing: a
    buffer written in place from a value that requires grad would itself require grad, and
    AOTAutograd then cannot keep the write in the graph (the "expected compiled_fn to be
    GraphModule" failure of run_decompositions)."""
    for b in model.buffers():
        b.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad] if not grad else []
    try:
        for p in params:
            p.requires_grad_(False)
        with torch.enable_grad() if grad else torch.no_grad():
            return torch.export.export(model, tuple(example_inputs), strict=strict).run_decompositions()
    finally:
        for p in params:
            p.requires_grad_(True)


def _decomposed_export(model: torch.nn.Module, example_inputs, grad=None):
    """torch.export.export + run_decompositions. grad=None (auto): with grad enabled, for the
    same reason as in capture_make_fx (no fused inference fast paths); but a module that writes
    its buffers (HuggingFace's static KV cache) cannot be decomposed that way: run_decompositions
    re-traces the buffer writes under autograd and fails with "expected compiled_fn to be
    GraphModule". Such modules, and any whose grad-mode export fails, are exported under
    no_grad, which is what transformers' own export recipe does (grad mode changes no values,
    only which ATen ops a fused fast path dispatches to); non-strict first, then strict
    (Dynamo), the recipe's default. grad=False goes straight to no_grad.
    Returns (decomposed program, grad mode used)."""
    if grad is None or grad:
        try:
            ep = _torch_export(model, example_inputs, True)
            if not getattr(ep.graph_signature, "buffers_to_mutate", None):
                return ep, True
        except Exception:  # noqa: BLE001 - retried below; the no_grad error is the one raised
            if grad:
                raise
    try:
        return _torch_export(model, example_inputs, False), False
    except Exception:  # noqa: BLE001
        return _torch_export(model, example_inputs, False, strict=True), False


def capture_torch_export(model: torch.nn.Module, example_inputs: Sequence[torch.Tensor], grad=None) -> Capture:
    """torch >= 2.1 (tested on the accelerator machine's 2.11; tests/fixtures/hf holds graphs
    it exported). Mutated buffers (a KV cache) become runtime inputs: they are state, not
    weights, and their values are cloned because running the model eagerly afterwards writes
    them."""
    ep, grad = _decomposed_export(model, example_inputs, grad)
    sig = ep.graph_signature
    to_param = dict(getattr(sig, "inputs_to_parameters", {}))
    to_param.update(getattr(sig, "inputs_to_buffers", {}))
    to_const = dict(getattr(sig, "inputs_to_lifted_tensor_constants", {}))
    mutations = dict(getattr(sig, "buffers_to_mutate", {}) or {})
    mutated = set(mutations.values())
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
            if fqn in mutated:
                placeholders.append(Placeholder(node.name, fqn, "input", value.detach().clone(), state=True))
            else:
                placeholders.append(Placeholder(node.name, fqn, "parameter", value.detach()))
        elif node.name in to_const:
            placeholders.append(Placeholder(node.name, node.name, "parameter", constants[to_const[node.name]].detach()))
        else:
            if user_index >= len(example_inputs):
                raise ExportError(f"placeholder {node.name}: more graph inputs than example inputs")
            placeholders.append(Placeholder(node.name, user_names[user_index], "input", example_inputs[user_index]))
            user_index += 1
    return Capture(ep.graph_module, placeholders, "torch.export", list(getattr(sig, "user_outputs", [])),
                   mutations, grad)


def capture(model: torch.nn.Module, example_inputs, method: str = "auto", grad=None) -> Capture:
    example_inputs = check_inputs(example_inputs)
    if method == "auto":
        method = "torch.export" if has_torch_export() else "make_fx"
    if method == "torch.export":
        return capture_torch_export(model, example_inputs, grad)
    if method == "make_fx":
        return capture_make_fx(model, example_inputs)
    raise ExportError(f"unknown capture method '{method}' (auto, make_fx, torch.export)")
