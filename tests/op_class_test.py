"""lpu and the HTML report classify kernels alike: both read reports/op_classes.json, lpu
through its compiled-in copy and C++ regexes, the report through Python's re. Every kernel's
`op_class` in `lpu run --json` must equal what the report's kernel_op_class gives it.

    pytest tests/op_class_test.py --lpu LPU [--workdir WORKDIR]     (reports/ on PYTHONPATH)
"""
import json
import os
import subprocess

import pytest

from plots_runs import kernel_op_class

RUNS = [("opt-1.3b-decode", "none"), ("opt-1.3b-decode", "greedy"), ("llama2-7b-decode", "none"),
        ("tiny-llama-decode-32", "greedy"), ("ln_gelu_add", "none")]


def test_lpu_and_the_report_classify_kernels_alike(lpu, workdir, check):
    seen = set()
    for workload, fusion in RUNS:
        out = os.path.join(workdir, "%s-%s.json" % (workload, fusion))
        r = subprocess.run([lpu, "run", workload, "--arch", "lpu-asic", "--fusion", fusion, "--json", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail("lpu run %s exits %d: %s" % (workload, r.returncode, r.stderr[-300:]))
        with open(out) as f:
            kernels = json.load(f)["kernels"]
        for k in kernels:
            seen.add(k["op_class"])
            check(k["op_class"] == kernel_op_class(k), "%s %s: lpu says %s, the report %s"
                  % (workload, k["name"], k["op_class"], kernel_op_class(k)))
    for cls in ["LM head", "FFN", "projection", "attention", "norm"]:
        check(cls in seen, "a kernel of class %s (else the comparison would miss its rules)" % cls)
    print("classes seen: %s" % ", ".join(sorted(seen)))
