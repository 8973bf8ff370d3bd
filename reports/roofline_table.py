"""The per-op-class roofline table of a run, from its kernel list (`lpu run --json`).

Each kernel carries its HBM bytes, its roofline on the config (`roofline_cycles`, `bound`)
and its span split by category (`breakdown_cycles`: docs/sim-model.md, "Per-kernel
attribution"). A class sums its kernels; its top blocker is the category that lost the most
cycles against the roofline: every category's cycles, except that the bound resource's own
category (bandwidth when HBM-bound, compute when SXE/VXE-bound) counts only beyond the
roofline (the same rule as workbench/jobs/roofline.cpp, kernel_loss)."""
from plots_runs import OP_CLASSES, kernel_op_class

CATEGORIES = ["bandwidth", "compute", "latency", "sync", "dependency", "issue", "other"]


def kernel_loss(k):
    b = k.get("breakdown_cycles") or {}
    loss = {c: float(b.get(c, 0)) for c in CATEGORIES}
    own = "bandwidth" if k.get("bound", "hbm") == "hbm" else "compute"
    loss[own] = max(0.0, loss[own] - float(k.get("roofline_cycles", 0)))
    return loss


def has_breakdown(run):
    return any("breakdown_cycles" in k for k in run.kernels)


def class_rows(run):
    """[op class, kernels, HBM MB, roofline cycles, achieved cycles, % of roofline, top blocker, its cycles]"""
    acc = {}
    for k in run.kernels:
        a = acc.setdefault(kernel_op_class(k), {"n": 0, "bytes": 0, "roof": 0.0, "cyc": 0, "loss": dict.fromkeys(CATEGORIES, 0.0)})
        a["n"] += 1
        a["bytes"] += k.get("hbm_read_bytes", 0) + k.get("hbm_write_bytes", 0)
        a["roof"] += k.get("roofline_cycles", 0)
        a["cyc"] += k.get("cycles", 0)
        for c, v in kernel_loss(k).items():
            a["loss"][c] += v
    rows = []
    for cls in OP_CLASSES:
        if cls not in acc:
            continue
        a = acc[cls]
        top = max(CATEGORIES, key=lambda c: a["loss"][c])
        rows.append([cls, a["n"], "%.2f" % (a["bytes"] / 1e6), "%.0f" % a["roof"], a["cyc"],
                     "%.1f %%" % (100 * a["roof"] / a["cyc"]) if a["cyc"] else "", top, "%.0f" % a["loss"][top]])
    return rows


HEADER = ["op class", "kernels", "HBM (MB)", "roofline (cycles)", "achieved (cycles)", "of roofline", "top blocker",
          "blocker cycles"]
