"""lpu_frontend.simulate (docs/frontend.md): torch.compile to a simulated answer. On torch 1.13
(no Dynamo) through the make_fx route: a zoo model with a graph break (tests/frontend/models.py,
gpt_block_break) runs with PyTorch's outputs and reports both graphs, the break's price on the
host and a recompilation with its failed guard. The Dynamo route runs where torch has Dynamo
(torch >= 2.0; skipped on Debian's 1.13).

    LPU_BUILD_DIR=build PYTHONPATH=python:reports /usr/bin/python3 -m pytest tests/python_simulate_test.py
"""
import importlib.util
import json
import os

import pytest
import torch
import torch.nn as nn

import lpu
import lpu_frontend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_DYNAMO = hasattr(torch, "compile") and getattr(torch, "_dynamo", None) is not None


def zoo():
    spec = importlib.util.spec_from_file_location("zoo_models", os.path.join(ROOT, "tests", "frontend", "models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def host_price(arch, nbytes):
    """docs/graph-breaks.md: host.latency_us + bytes / host.link_gbps + host.op_us."""
    h = lpu.check_config(arch)["host"]
    return h["latency_us"] + nbytes / (h["link_gbps"] * 1e3) + h["op_us"]


@pytest.mark.skipif(HAS_DYNAMO, reason="the make_fx route is the one for torch without Dynamo")
def test_zoo_model_with_a_break_make_fx_route():
    model, (x,) = zoo().build("gpt_block_break")
    sim = lpu_frontend.simulate(arch="lpu-asic")
    compiled = sim.compile(model)
    y = compiled(x)
    with torch.no_grad():
        assert torch.equal(y, model(x))  # PyTorch's own outputs
    s = sim.summary()
    assert s.route == "make_fx"
    assert [g["name"] for g in s.graphs] == ["graph_0", "graph_1"]
    for g in s.graphs:
        assert g["latency_us"] > 0 and g["hbm_read_bytes"] > 0 and g["num_kernels"] >= 1 and g["compile"] == 0
    (p,) = s.programs
    assert p["graphs"] == ["graph_0", "graph_1"]
    (b,) = s.breaks
    # what crosses the host: the f32 value the check reads (amax, 4 B)
    assert b["node"] == "graph_0 -> graph_1" and b["bytes"] == 4
    assert b["host_us"] == pytest.approx(host_price("lpu-asic", 4))
    assert p["graph_breaks_host_us"] == pytest.approx(b["host_us"])
    assert p["latency_us"] == pytest.approx(sum(g["latency_us"] for g in s.graphs) + b["host_us"], rel=1e-6)
    text = str(s)
    assert "2 graphs, 1 programs, 0 recompilations" in text
    assert "break graph_0 -> graph_1: dynamo graph break, 4 B over the host link" in text
    # the manifest: graph_1 takes graph_0's residual stream, the host reads the checked value
    man = json.load(open(os.path.join(sim.dir, p["manifest"])))
    assert sorted(o["to"] for o in man["graphs"][0]["outputs"]) == ["graph", "host"]
    assert man["outputs"] == [{"graph": 1, "output": 0}]
    # the same signature again: guards hold, nothing new
    compiled(torch.randn(2, 5, 16))
    assert len(sim.summary().graphs) == 2
    d = sim.dir
    sim.close()
    assert not os.path.exists(d)


@pytest.mark.skipif(HAS_DYNAMO, reason="make_fx route")
def test_recompilation_names_the_failed_guard_and_explicit_breaks():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            y = torch.relu(self.a(x))
            lpu_frontend.graph_break()
            return self.b(y)

    m = Two().eval()
    sim = lpu_frontend.simulate(arch="lpu-small", fusion="none")
    f = sim.compile(m)
    f(torch.randn(4, 8))
    f(torch.randn(6, 8))
    s = sim.summary()
    assert [g["compile"] for g in s.graphs] == [0, 0, 1, 1]
    assert len(s.programs) == 2 and all(len(p["graph_breaks"]) == 1 for p in s.programs)
    (r,) = s.recompiles
    assert r["compile"] == 1 and r["reason"] == "inputs[0]: torch.float32 [4, 8] == torch.float32 [6, 8]"
    # the break carries y ([6, 8] f32 = 192 B) from graph 2 to graph 3 on the device: nothing on the host
    assert s.programs[1]["graph_breaks"][0]["bytes"] == 0
    assert "recompile 1 (Two): guard failed: inputs[0]" in str(s)
    # graphs refer to each other by their place in the call, not their compile order
    man = json.load(open(os.path.join(sim.dir, s.programs[1]["manifest"])))
    flows = [i for i in man["graphs"][1]["inputs"] if i["from"] == "graph"]
    assert flows == [{"name": "arg2", "from": "graph", "graph": 0, "output": 0}]
    assert [i.get("parameter") for i in man["graphs"][1]["inputs"] if i["from"] == "parameter"] == \
        ["b.weight", "b.bias"]


@pytest.mark.skipif(HAS_DYNAMO, reason="make_fx route")
def test_one_graph_without_breaks_matches_its_program():
    model, (x,) = zoo().build("gpt_block")
    sim = lpu_frontend.simulate(arch="lpu-asic")
    sim.compile(model)(x)
    s = sim.summary()
    assert len(s.graphs) == 1 and s.breaks == []
    assert s.programs[0]["latency_us"] == pytest.approx(s.graphs[0]["latency_us"])


@pytest.mark.skipif(not HAS_DYNAMO, reason="torch.compile needs torch >= 2.0 (Dynamo); Debian's is 1.13")
def test_dynamo_route():  # pragma: no cover - runs on torch 2.x only
    model, (x,) = zoo().build("gpt_block_break")
    sim = lpu_frontend.simulate(arch="lpu-asic")
    compiled = torch.compile(model, backend=sim, dynamic=False)
    with torch.no_grad():
        y = compiled(x)
        assert torch.allclose(y, model(x), atol=1e-6)
        compiled(torch.randn(3, 5, 16))  # a new shape: Dynamo recompiles
    s = sim.summary()
    assert s.route == "dynamo" and len(s.graphs) >= 4
    # two calls, each its own program of two graphs (the new shape compiled new ones) and a break
    assert [len(p["graphs"]) for p in s.programs] == [2, 2]
    assert all(len(p["graph_breaks"]) == 1 for p in s.programs)
    assert s.programs[1]["latency_us"] > s.programs[0]["latency_us"]
    assert s.recompiles and all(r["compile"] >= 1 for r in s.recompiles)
    assert all(r["reason"] for r in s.recompiles)
    # sim.compile: the same, with the calls' bounds known
    sim2 = lpu_frontend.simulate(arch="lpu-asic")
    with torch.no_grad():
        sim2.compile(model)(x)
    assert len(sim2.summary().programs) == 1


@pytest.mark.skipif(not HAS_DYNAMO, reason="torch.compile needs torch >= 2.0 (Dynamo); Debian's is 1.13")
def test_dynamo_route_with_automatic_dynamic_shapes():  # pragma: no cover - runs on torch 2.x only
    """torch.compile's default: after a size changes Dynamo hands the backend a dynamic graph
    (SymInt sizes and arguments). Each size is simulated as its own program: the backend turns
    the sizes into guards, so a new size recompiles and a seen one reuses its price."""
    torch._dynamo.reset()
    model, _ = zoo().build("gpt_block_break")
    sim = lpu_frontend.simulate(arch="lpu-asic")
    compiled = torch.compile(model, backend=sim)
    with torch.no_grad():
        for batch in (2, 3, 4, 3):
            x = torch.randn(batch, 5, 16)
            assert torch.allclose(compiled(x), model(x), atol=1e-6)
    s = sim.summary()
    assert len(s.graphs) == 6 and [len(p["graphs"]) for p in s.programs] == [2, 2, 2]
    latencies = [p["latency_us"] for p in s.programs]
    assert latencies == sorted(latencies) and len(set(latencies)) == 3
    assert all("size mismatch" in r["reason"] for r in s.recompiles)
