"""A sweep over the tuner's policies: `fusion: [greedy, search, search-isu]` runs, every point
succeeds, and neither tuner point is slower than greedy's (tuner/tuner.h: greedy is a candidate).
Usage: tuner_sweep_test.py LPU WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def main(lpu, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "out")
    r = subprocess.run([lpu, "sweep", os.path.join(DATA, "tuner_sweep.yaml"), "-j", "2", "-o", out],
                       capture_output=True, text=True)
    failures = []
    if r.returncode != 0:
        failures.append("sweep exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
    rows = []
    path = os.path.join(out, "results.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    by_policy = {row.get("fusion"): row for row in rows}
    if sorted(by_policy) != ["greedy", "search", "search-isu"]:
        failures.append("one row per policy (got %s)" % sorted(by_policy))
    for p, row in by_policy.items():
        if row.get("status") != "ok":
            failures.append("%s point succeeded (%s: %s)" % (p, row.get("status"), row.get("error")))
    if not failures:
        g = by_policy["greedy"]["cycles"]
        for p in ("search", "search-isu"):
            if by_policy[p]["cycles"] > g:
                failures.append("%s (%d cycles) is not slower than greedy (%d)" % (p, by_policy[p]["cycles"], g))
    for f in failures:
        print("FAIL:", f)
    print("tuner sweep: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
