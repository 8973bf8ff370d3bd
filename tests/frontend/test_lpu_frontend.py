"""The PyTorch frontend's API and the CLI on exported graphs.

    LPU_BIN=build/lpu PYTHONPATH=python /usr/bin/python3 -m pytest tests/frontend

(ctest runs this as `frontend_python`; pytest puts tests/frontend on sys.path for `models`.)
"""

import json
import os
import struct
import subprocess
import tempfile
import unittest

import torch
import torch.nn as nn
from torch.fx.experimental.proxy_tensor import make_fx

import lpu_frontend
import models

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

LPU = os.environ.get("LPU_BIN", os.path.join(ROOT, "build", "lpu"))


def lpu(*args):
    return subprocess.run([LPU, *args], capture_output=True, text=True, cwd=ROOT)


def load(path):
    with open(path) as f:
        return json.load(f)


def ops_of(doc):
    return {n["op"] for n in doc["nodes"] if n["kind"] == "call"}


class Unsupported(nn.Module):
    """An op outside the registry (core ATen covers flip, sort, ...; not logcumsumexp)."""

    def forward(self, x):
        return torch.logcumsumexp(x, 0) + 1


class DataIndexing(nn.Module):
    """Core ATen ops that run as host ops or decompose: x[:, i] (None in the index list),
    sort, repeat_interleave, cumsum, index_select, clamp, sin."""

    def forward(self, x, i):
        y = x[:, i] * 2
        z = torch.sort(x, dim=-1).values
        w = torch.repeat_interleave(x, 2, dim=0)
        c = torch.cumsum(x, 1)
        return (y.sum(-1) + z.sum(-1) + w[:3].sum(-1) + c[:, -1] + torch.clamp(x, -0.5, 0.5).sum(-1)
                + torch.sin(x).sum(-1) + x.index_select(1, i).sum(-1))


class SplatConstant(nn.Module):
    def forward(self, x):
        return x * torch.full((4,), 0.5) + torch.ones(3, 4).tril().sum()


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, name):
        model, inputs = models.build(name)
        path = os.path.join(self.dir, f"{name}.json")
        lpu_frontend.export(model, inputs, path)
        return path, model, inputs

    def test_json_and_sidecar_hold_weights_inputs_and_eager_outputs(self):
        path, model, (x,) = self.export("linear")
        doc = load(path)
        self.assertEqual((doc["format"], doc["version"]), ("lpu-graph", lpu_frontend.FORMAT_VERSION))
        self.assertEqual(ops_of(doc), {"aten.t", "aten.addmm"})
        index = {(e["role"], e["name"]): e for e in doc["tensors"]}
        self.assertEqual(set(index), {("parameter", "weight"), ("parameter", "bias"), ("input", "input"),
                                      ("expected", "output0")})
        with open(os.path.join(self.dir, "linear.bin"), "rb") as f:
            blob = f.read()
        for (role, name), e in index.items():
            self.assertEqual(e["offset"] % 64, 0)
            self.assertEqual(e["file"], "linear.bin")
            n = 1
            for s in e["shape"]:
                n *= s
            values = struct.unpack_from(f"<{n}f", blob, e["offset"])
            want = {"weight": model.weight, "bias": model.bias, "input": x, "output0": model(x)}[name]
            self.assertEqual(list(values), want.detach().reshape(-1).tolist(), name)

    def test_constant_subgraphs_become_constant_parameters(self):
        doc = load(self.export("attention")[0])
        self.assertFalse(ops_of(doc) & {"aten.ones", "aten.triu", "aten.arange"})
        consts = [n for n in doc["nodes"] if n.get("attrs", {}).get("constant")]
        self.assertEqual([(c["dtype"], c["shape"]) for c in consts], [("bool", [5, 5])])
        rope = load(self.export("rotary")[0])
        self.assertFalse(ops_of(rope) & {"aten.sin", "aten.cos", "aten.arange", "aten.outer"})

    def test_splat_constants_fold_away_in_cpp(self):
        path = os.path.join(self.dir, "splat.json")
        lpu_frontend.export(SplatConstant(), (torch.randn(3, 4),), path)
        splats = {n["name"]: n["attrs"]["splat"] for n in load(path)["nodes"] if "splat" in n.get("attrs", {})}
        self.assertEqual(sorted(splats.values()), [0.5, 6.0])
        r = lpu("compile", path, "--emit", "core")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("parameter", r.stdout)  # both constants became `full`
        self.assertEqual(lpu("ref", path).returncode, 0)

    def test_in_place_ops_are_functionalized(self):
        ops = ops_of(load(self.export("inplace")[0]))
        self.assertFalse([op for op in ops if op.endswith("_") and not op.startswith("aten._")], ops)
        self.assertIn("aten.masked_fill", ops)

    def test_encoder_layer_is_captured_op_by_op_not_as_the_fused_fast_path(self):
        ops = ops_of(load(self.export("encoder_post_norm")[0]))
        self.assertNotIn("aten._transformer_encoder_layer_fwd", ops)
        self.assertTrue({"aten.bmm", "aten._softmax", "aten.native_layer_norm"} <= ops)

    def test_lpu_backend_exports_a_make_fx_graph(self):
        model, (x,) = models.build("gpt_block")
        gm = make_fx(model)(x)
        os.environ["LPU_EXPORT_DIR"] = self.dir
        try:
            fn = lpu_frontend.lpu_backend(gm, [x])
        finally:
            del os.environ["LPU_EXPORT_DIR"]
        self.assertTrue(torch.equal(fn(x), model(x)))
        path = lpu_frontend.exported_paths[-1]
        self.assertTrue(path.startswith(self.dir))
        doc = load(path)
        weights = [n for n in doc["nodes"] if n["kind"] == "parameter" and not n.get("attrs")]
        self.assertEqual(len(weights), len(list(model.parameters())))  # weights stay weights, not constants
        r = lpu("ref", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_export_errors_name_the_problem(self):
        with self.assertRaisesRegex(lpu_frontend.ExportError, "example input 1 is a int"):
            lpu_frontend.export(nn.Linear(2, 2), (torch.randn(1, 2), 3), os.path.join(self.dir, "bad.json"))
        with self.assertRaisesRegex(lpu_frontend.ExportError, "float64 is not supported"):
            lpu_frontend.export(nn.ReLU(), (torch.randn(2, dtype=torch.float64),), os.path.join(self.dir, "bad.json"))


class CliTest(unittest.TestCase):
    """`lpu` on exported graphs: the ref check, its failure modes, compile and run."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        for name in ("linear", "activations"):
            model, inputs = models.build(name)
            lpu_frontend.export(model, inputs, os.path.join(cls.dir, f"{name}.json"))
        lpu_frontend.export(Unsupported(), (torch.randn(3, 2),), os.path.join(cls.dir, "unsupported.json"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_ref_passes_and_prints_the_error(self):
        r = lpu("ref", self.path("linear.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"reference vs PyTorch: max abs error [0-9.e-]+ .*PASS")

    def test_ref_fails_with_exit_1_when_outputs_differ(self):
        doc = load(self.path("linear.json"))
        e = next(t for t in doc["tensors"] if t["role"] == "expected")
        with open(self.path("linear.bin"), "rb") as f:
            blob = bytearray(f.read())
        struct.pack_into("<f", blob, e["offset"], struct.unpack_from("<f", blob, e["offset"])[0] + 0.01)
        os.makedirs(self.path("corrupt"), exist_ok=True)
        with open(self.path("corrupt/linear.bin"), "wb") as f:
            f.write(blob)
        with open(self.path("corrupt/linear.json"), "w") as f:
            json.dump(doc, f)
        r = lpu("ref", self.path("corrupt/linear.json"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"max abs error 0\.01")
        self.assertIn("output0[0]", r.stderr)
        # The same through the whole back end: compiled, simulated, compared with "PyTorch".
        r = lpu("run", self.path("corrupt/linear.json"), "--functional")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAIL", r.stdout)

    def test_unsupported_op_is_an_input_error_naming_op_and_node(self):
        for cmd in (["ref"], ["compile", "--emit", "core"], ["run"]):
            r = lpu(cmd[0], self.path("unsupported.json"), *cmd[1:])
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertRegex(
                r.stderr,
                r"^error: .*node %logcumsumexp: unknown op 'aten\.logcumsumexp' \(see `lpu list ops`.*--on-unsupported=break.*\n$")

    def test_data_dependent_indexing_runs_with_host_breaks(self):
        path = self.path("indexing.json")
        lpu_frontend.export(DataIndexing(), (torch.randn(3, 4), torch.tensor([3, 1])), path)
        index = next(n for n in load(path)["nodes"] if n.get("op") == "aten.index")
        self.assertEqual(index["attrs"]["indexed_dims"], [1])  # x[:, i]: None, then i
        for fusion in ("greedy", "none"):
            r = lpu("run", path, "--functional", "--fusion", fusion)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"break \S+ +aten\.sort")
            self.assertRegex(r.stdout, r"functional: .*PASS")

    def test_compile_emits_captured_and_core_graphs(self):
        out = self.path("ir")
        r = lpu("compile", self.path("linear.json"), "--emit", "graph,core", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "graph.txt")) as f:
            self.assertIn("aten.addmm(%bias, %input, %t)", f.read())
        with open(os.path.join(out, "core.txt")) as f:
            core = f.read()
        self.assertIn("= matmul(%input, %t_permute)", core)
        self.assertNotIn("aten.", core)

    def test_workload_yaml_with_a_graph_key_runs_functionally(self):
        # activations.json lowers with today's back end (pointwise ops only): the whole path
        # runs and compares the simulated outputs with PyTorch's.
        with open(self.path("act.yaml"), "w") as f:
            f.write("graph: activations.json\nname: act\n")
        r = lpu("run", self.path("act.yaml"), "--functional")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"functional: max abs error [0-9.e-]+.*PASS")
        r = lpu("run", self.path("activations.json"), "--functional")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
