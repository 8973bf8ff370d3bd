#!/usr/bin/env python3
"""20 points of a sweep (HBM bandwidth) through the module lpu, serially and from a 2-worker
ThreadPoolExecutor (docs/python.md, "Threads"): the two must agree, and the ratio is printed.

    PYTHONPATH=python:reports /usr/bin/python3 scripts/bench_python_threads.py llama2-7b-decode lpu-asic
"""
import os, sys, time
from concurrent.futures import ThreadPoolExecutor
import lpu
W, A = sys.argv[1], sys.argv[2]
BWS = [256 * (i + 1) for i in range(20)]
point = lambda bw: lpu.run(W, arch=A, overrides={"hbm.bandwidth_gbps": bw})["latency_us"]
point(BWS[0])
def timed(f):
    c0, t0 = os.times(), time.monotonic(); out = f(); c1, t1 = os.times(), time.monotonic()
    return out, t1 - t0, (c1.user - c0.user + c1.system - c0.system) / (t1 - t0)
def threads():
    with ThreadPoolExecutor(2) as p: return list(p.map(point, BWS))
s, ts, cs = timed(lambda: [point(b) for b in BWS])
t, tt, ct = timed(threads)
assert s == t
print("%s on %s, 20 points: serial %.2f s (CPU %.0f%%), 2 threads %.2f s (CPU %.0f%%): %.2fx" % (W, A, ts, 100*cs, tt, 100*ct, ts/tt))
