"""The exporter's keyword inputs, buffer writes (a KV cache) and timing-only sidecars, and the
torch.compile manifest recorder (its flow tracing; Dynamo itself needs torch >= 2.0, so the
graphs are handed to the backend by hand here, as Dynamo would).

    LPU_BIN=build/lpu PYTHONPATH=python /usr/bin/python3 -m pytest tests/frontend
"""

import json
import os
import struct
import subprocess
import tempfile
import unittest

import torch
import torch.nn as nn

import lpu_frontend

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

LPU = os.environ.get("LPU_BIN", os.path.join(ROOT, "build", "lpu"))


class StaticCache(nn.Module):
    """One attention read of a static cache that the step writes first (HuggingFace style:
    a length counter and index_copy_ of the new keys at cache_position)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k = nn.Linear(8, 8), nn.Linear(8, 8)
        self.register_buffer("k_cache", torch.randn(1, 6, 8))
        self.register_buffer("length", torch.zeros(1, dtype=torch.long))
        self.calls = 0

    def forward(self, x, cache_position):
        self.calls += 1
        k = self.k(x)
        self.length.copy_(cache_position + 1)
        self.k_cache.index_copy_(1, cache_position, k)
        return torch.softmax(self.q(x) @ self.k_cache.transpose(1, 2), -1)


def read_array(json_path, entry):
    fmt = {"f32": "f", "i64": "q"}[entry["dtype"]]
    n = 1
    for s in entry["shape"]:
        n *= s
    with open(os.path.join(os.path.dirname(json_path), entry["file"]), "rb") as f:
        f.seek(entry["offset"])
        return torch.tensor(struct.unpack("<" + fmt * n, f.read(n * struct.calcsize(fmt)))).reshape(entry["shape"])


class BufferWrites(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "kv.json")

    def tearDown(self):
        self.tmp.cleanup()

    def test_cache_write_becomes_an_output_of_the_rows_written(self):
        m = StaticCache().eval()
        before = m.k_cache.clone()
        x, pos = torch.randn(1, 1, 8), torch.tensor([2])
        e = lpu_frontend.export(m, (), self.path, kwargs={"x": x, "cache_position": pos}, ignore_mutations="length")
        doc = json.load(open(self.path))
        self.assertEqual(e.inputs, ["x", "cache_position"])
        kinds = {n["name"]: n["kind"] for n in doc["nodes"]}
        self.assertEqual(kinds["k_cache"], "placeholder")  # runtime state, not a weight
        self.assertEqual(kinds["q.weight"], "parameter")  # the wrapper's "model." prefix is gone
        self.assertNotIn("length", kinds)  # ignored bookkeeping
        self.assertEqual(len(doc["outputs"]), 2)
        # torch 1.13's make_fx keeps index_copy; torch 2.11's export decomposes it to index_put
        self.assertIn(doc["meta"]["buffer_writes"],
                      [[{"output": 1, "buffer": "k_cache", "op": "aten.index_copy", "rows": True, "dim": 1}],
                       [{"output": 1, "buffer": "k_cache", "op": "aten.index_put", "rows": True}]])
        entries = {(t["role"], t["name"]): t for t in doc["tensors"]}
        self.assertEqual(entries[("expected", "output1")]["shape"], [1, 1, 8])  # the rows, not the cache
        with torch.no_grad():
            rows = m.k(x)
        self.assertTrue(torch.allclose(read_array(self.path, entries[("expected", "output1")]), rows, atol=1e-6))
        # The cache in the sidecar is the state before the step (the eager run wrote the model's).
        self.assertTrue(torch.equal(read_array(self.path, entries[("input", "k_cache")]), before))
        self.assertFalse(torch.equal(m.k_cache, before))
        # The cache read sees the new row through a select, not a scatter (no host op).
        ops = {n["op"] for n in doc["nodes"] if n["kind"] == "call"}
        self.assertIn("aten.where", ops)
        self.assertNotIn("aten.index_copy", ops)
        for fusion in ("greedy", "none"):
            r = subprocess.run([LPU, "run", self.path, "--functional", "--fusion", fusion], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"graph breaks\s+0\n")

    def test_timing_only_export_writes_a_sparse_sidecar_and_runs_nothing_eagerly(self):
        m = StaticCache().eval()
        lpu_frontend.export(m, (), self.path, kwargs={"x": torch.randn(1, 1, 8), "cache_position": torch.tensor([0])},
                            write_arrays=False)
        doc = json.load(open(self.path))
        # make_fx's trace calls forward once, torch.export's (torch 2.x) replays it without the
        # Python side effect; neither runs it eagerly for expected outputs
        self.assertLessEqual(m.calls, 1)
        last = max(doc["tensors"], key=lambda t: t["offset"])
        n = 1
        for s in last["shape"]:
            n *= s
        size = os.path.getsize(os.path.join(self.tmp.name, "kv.bin"))
        self.assertEqual(size, last["offset"] + n * {"f32": 4, "i64": 8}[last["dtype"]])
        with open(os.path.join(self.tmp.name, "kv.bin"), "rb") as f:
            self.assertEqual(f.read().count(0), size)
        self.assertEqual(doc["meta"]["sidecar"], "empty (timing only)")
        # Two writes: the counter too, whole (copy_ is no row write).
        self.assertEqual({w["buffer"]: w["rows"] for w in doc["meta"]["buffer_writes"]},
                         {"k_cache": True, "length": False})


class G0(nn.Module):
    def forward(self, L_aw_, L_ab_, L_x_):
        y = nn.functional.gelu(nn.functional.linear(L_x_, L_aw_, L_ab_))
        return (y.sum(), y)


class G1(nn.Module):
    def forward(self, L_y_, L_bw_, L_bb_, L_x_):
        return (nn.functional.linear(L_y_, L_bw_, L_bb_) + L_x_ * 2,)


class ManifestRecorderTest(unittest.TestCase):
    def test_flows_between_graphs_and_lpu_runs_the_program(self):
        with tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(0)
            a, b = nn.Linear(16, 16), nn.Linear(16, 16)
            model = nn.ModuleDict({"a": a, "b": b})
            rec = lpu_frontend.ManifestRecorder(tmp, model=model)
            g0, g1 = torch.fx.symbolic_trace(G0()), torch.fx.symbolic_trace(G1())

            def program(x):  # what Dynamo runs: graph 0, Python on the host, graph 1
                s, y = rec.backend(g0, [a.weight, a.bias, x])(a.weight, a.bias, x)
                h = x + 1 if s.item() > 0 else x - 1  # made on the host
                return rec.backend(g1, [y, b.weight, b.bias, h])(y, b.weight, b.bias, h)[0]

            with torch.no_grad():
                rec.run(program, torch.randn(4, 16))
            man = json.load(open(rec.write()))
            g0j, g1j = man["graphs"]
            self.assertEqual([i["from"] for i in g0j["inputs"]], ["parameter", "parameter", "input"])
            self.assertEqual(g0j["inputs"][0]["parameter"], "a.weight")
            self.assertEqual([o["to"] for o in g0j["outputs"]], ["host", "graph"])
            self.assertEqual(g1j["inputs"][0], {"name": "L_y_", "from": "graph", "graph": 0, "output": 1})
            self.assertEqual(g1j["inputs"][3]["from"], "host")
            self.assertEqual(man["outputs"], [{"graph": 1, "output": 0}])
            r = subprocess.run([LPU, "run", os.path.join(tmp, "manifest.json"), "--functional"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            # host bytes: the f32 sum read (4 B) + the [4, 16] f32 tensor made on the host (256 B)
            self.assertIn("break graph_0 -> graph_1: dynamo graph break, 260 B over the host link", r.stdout)

    def test_scalar_graph_inputs_are_bound_to_the_call_values(self):
        """Dynamo hands a backend ints (SymInts in a dynamic graph) beside tensors: the export
        takes this call's values as constants, and the manifest skips them."""

        class G2(nn.Module):
            def forward(self, L_x_, s0, scale):
                return (L_x_.reshape(s0, -1) * scale,)

        with tempfile.TemporaryDirectory() as tmp:
            rec = lpu_frontend.ManifestRecorder(tmp)
            g2 = torch.fx.symbolic_trace(G2())
            x = torch.randn(4, 6)
            with torch.no_grad():
                out = rec.run(lambda t: rec.backend(g2, [t, 2, 3.0])(t, 2, 3.0)[0], x)
            self.assertEqual(tuple(out.shape), (2, 12))
            man = json.load(open(rec.write()))
            self.assertEqual([i["from"] for i in man["graphs"][0]["inputs"]], ["input"])
            graph = json.load(open(os.path.join(tmp, "graph_0.json")))
            self.assertEqual(sum(n["kind"] == "placeholder" for n in graph["nodes"]), 1)
            r = subprocess.run([LPU, "run", os.path.join(tmp, "manifest.json"), "--functional"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with self.assertRaisesRegex(TypeError, "graph input of type str"):
                rec.backend(g2, [x, "2", 3.0])


if __name__ == "__main__":
    unittest.main()
