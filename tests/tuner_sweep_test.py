"""A sweep over the tuner's policies: `fusion: [greedy, search, search-isu]` runs, every point
succeeds, and neither tuner point is slower than greedy's (tuner/tuner.h: greedy is a candidate).

    pytest tests/tuner_sweep_test.py --lpu LPU [--workdir WORKDIR]
"""
import json
import os
import subprocess

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def test_tuner_policies_in_a_sweep(lpu, workdir, check):
    out = os.path.join(workdir, "out")
    r = subprocess.run([lpu, "sweep", os.path.join(DATA, "tuner_sweep.yaml"), "-j", "2", "-o", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, "sweep exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
    rows = []
    path = os.path.join(out, "results.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    by_policy = {row.get("fusion"): row for row in rows}
    check(sorted(by_policy) == ["greedy", "search", "search-isu"], "one row per policy (got %s)" % sorted(by_policy))
    for p, row in by_policy.items():
        check(row.get("status") == "ok", "%s point succeeded (%s: %s)" % (p, row.get("status"), row.get("error")))
    if check.failures:
        return
    g = by_policy["greedy"]["cycles"]
    for p in ("search", "search-isu"):
        check(by_policy[p]["cycles"] <= g, "%s (%d cycles) is not slower than greedy (%d)" % (p, by_policy[p]["cycles"], g))
