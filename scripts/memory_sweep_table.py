#!/usr/bin/env python3
"""Markdown tables of the memory-technology sweeps (docs/memory.md), from their results.jsonl.

  /usr/bin/python3 scripts/memory_sweep_table.py out/sweeps/memory_tech \\
      out/sweeps/memory_parts_bandwidth out/sweeps/memory_parts

Each point: latency, tokens/s, the bytes moved over the latency (achieved GB/s), the bank
model's row hit rate, and the bank model against the bandwidth model on the same device."""
import json
import os
import sys


def points(d):
    with open(os.path.join(d, "results.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def row(p):
    gbps = (p["hbm_read_bytes"] + p["hbm_write_bytes"]) / (p["latency_us"] * 1e3)
    return {"workload": p["workload"], "tech": p["memory.technology"], "model": p["arch.memory.model"]
            if "arch.memory.model" in p else "bandwidth", "peak": p["arch.hbm.bandwidth_gbps"],
            "us": p["latency_us"], "tps": p["llm.tokens_per_s"], "gbps": gbps,
            "hits": p.get("dram.row_hit_rate"), "channels": p.get("arch.memory.channels")}


def table(rows):
    ref = {(r["workload"], r["tech"], r["peak"]): r for r in rows if r["model"] == "bandwidth"}
    print("| workload | technology | peak GB/s | model | channels | latency us | tokens/s | achieved GB/s | "
          "row hit rate | banks vs bandwidth |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["workload"], r["tech"], r["model"])):
        b = ref.get((r["workload"], r["tech"], r["peak"]))
        vs = "%+.2f%%" % (100 * (r["us"] / b["us"] - 1)) if b and r["model"] == "banks" else ""
        print("| %s | %s | %.1f | %s | %s | %.1f | %.1f | %.0f | %s | %s |" % (
            r["workload"], r["tech"], r["peak"], r["model"], r["channels"] or "", r["us"], r["tps"], r["gbps"],
            "%.3f" % r["hits"] if r["hits"] is not None else "", vs))


rows = []
for d in sys.argv[1:]:
    if rows and os.path.basename(d.rstrip("/")) == "memory_tech":
        table(rows)
        rows = []
    rows += [row(p) for p in points(d)]
    if os.path.basename(d.rstrip("/")) == "memory_tech":
        table(rows)
        print()
        rows = []
if rows:
    table(rows)
