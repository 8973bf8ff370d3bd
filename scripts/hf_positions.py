"""The position work of a HuggingFace decode graph: what the built-in builder takes as inputs
(the step's rotary tables, its mask) and an exported graph computes from `cache_position`, the
`inv_freq` buffer and constants. tests/hf_decode_compare.py and scripts/coverage_matrix.py
compare an HF step with the built-in one without it."""

import json

SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "bool": 1}


def position_inputs(path, names):
    """(bytes, [names]) of the inputs that carry positions: named ones, plus folded constants."""
    total, found = 0, []
    for n in json.load(open(path))["nodes"]:
        if n["kind"] not in ("placeholder", "parameter"):
            continue
        attrs = n.get("attrs", {})
        folded = attrs.get("constant") is True and "splat" not in attrs
        folded = folded or "_lifted_tensor_" in n["name"]
        if folded or any(n["name"] == x or n["name"].endswith("." + x) for x in names):
            k = 1
            for s in n["shape"]:
                k *= s
            total += k * SIZE[n["dtype"]]
            found.append(n["name"])
    return total, found


def position_nodes(path, names):
    """The HF graph's nodes computed from positions only: from the position inputs, integer
    inputs (cache_position, the static cache's lengths), scalar inputs (the mask's fill value)
    and constants (calls without inputs)."""
    nodes = json.load(open(path))["nodes"]
    pos = set(names)
    for n in nodes:
        if n["kind"] in ("placeholder", "parameter") and (n["dtype"] in ("i64", "i32") or not n["shape"]):
            pos.add(n["name"])
    for n in nodes:  # the file lists nodes in topological order
        if n["kind"] == "call" and all(i in pos for i in n.get("inputs", [])):
            pos.add(n["name"])
    return pos


def position_kernels(kernels, graph_names, pos):
    """The kernels every node of which comes from a position node (a core node is named after
    its graph node: that name, or it and `_` and a suffix; the longest such name)."""
    def origin(core):
        best = None
        for name in graph_names:
            if (core == name or core.startswith(name + "_")) and (best is None or len(name) > len(best)):
                best = name
        return best

    return [k for k in kernels if k["nodes"] and all(origin(c) in pos for c in k["nodes"])]


def position_work_us(graph, stats):
    """(microseconds, kernels) of the run `stats` (`lpu run --json` of `graph`) spent in kernels
    computing from positions only."""
    _, names = position_inputs(graph, ("inv_freq", "cache_position"))
    graph_names = [n["name"] for n in json.load(open(graph))["nodes"]]
    kernels = position_kernels(stats["kernels"], graph_names, position_nodes(graph, names))
    us_per_cycle = stats["latency_us"] / stats["cycles"] if stats["cycles"] else 0
    return us_per_cycle * sum(k["cycles"] for k in kernels), kernels
