#!/usr/bin/env python3
"""lpu and the HTML report classify kernels alike: both read reports/op_classes.json, lpu
through its compiled-in copy and C++ regexes, the report through Python's re. Every kernel's
`op_class` in `lpu run --json` must equal what the report's kernel_op_class gives it.

    op_class_test.py path/to/lpu WORKDIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports"))
from plots_runs import kernel_op_class  # noqa: E402


def main(lpu, work):
    os.makedirs(work, exist_ok=True)
    bad, seen = 0, set()
    for workload, fusion in [("opt-1.3b-decode", "none"), ("opt-1.3b-decode", "greedy"), ("llama2-7b-decode", "none"),
                             ("tiny-llama-decode-32", "greedy"), ("ln_gelu_add", "none")]:
        out = os.path.join(work, "%s-%s.json" % (workload, fusion))
        r = subprocess.run([lpu, "run", workload, "--arch", "lpu-asic", "--fusion", fusion, "--json", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: lpu run %s exits %d: %s" % (workload, r.returncode, r.stderr[-300:]))
            return 1
        with open(out) as f:
            kernels = json.load(f)["kernels"]
        for k in kernels:
            seen.add(k["op_class"])
            if k["op_class"] != kernel_op_class(k):
                bad += 1
                print("FAIL: %s %s: lpu says %s, the report %s" % (workload, k["name"], k["op_class"], kernel_op_class(k)))
    for cls in ["LM head", "FFN", "projection", "attention", "norm"]:
        if cls not in seen:
            bad += 1
            print("FAIL: no kernel of class %s (the comparison would miss its rules)" % cls)
    print("%d mismatches; classes seen: %s" % (bad, ", ".join(sorted(seen))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
