"""Timeline of a Chrome trace-event file: one lane per engine (thread), slices coloured by kernel."""
from matplotlib.collections import PolyCollection

import re

from plot_util import NoData, colour_map, plt, save, unique
from plots_runs import OP_CLASSES, node_class

BY_CLASS_ABOVE = 20  # more kernels than this (an LLM's layers): colour by op class instead

MAX_TRACES = 6
EXACT_LIMIT = 3000  # slices per trace drawn one by one; beyond that, binned occupancy
BINS = 800


def concurrency(slices):
    """Most slices in flight at once in a lane (2 for two DMA engines sharing a track)."""
    edges = sorted([(e["ts"], 1) for e in slices] + [(e["ts"] + e["dur"], -1) for e in slices])
    now = peak = 0
    for _, d in edges:
        now += d
        peak = max(peak, now)
    return max(1, peak)


def occupancy(slices, end):
    """For each of BINS time bins: the fraction of it with at least one instruction in
    flight on the lane, and the kernel busiest in it. A trace has a slice per instruction
    (tens of thousands, far below a pixel each, overlapping where an engine pipelines); this
    keeps the picture honest (a half-idle engine looks half idle) and fast."""
    width = end / BINS
    union = []  # (start, stop, kernel): overlaps cut so no time counts twice
    for e in sorted(slices, key=lambda e: e["ts"]):
        start, stop = e["ts"], e["ts"] + e["dur"]
        if union and start < union[-1][1]:
            start = union[-1][1]
        if stop > start:
            union.append((start, stop, e.get("cat", "")))
    busy = [dict() for _ in range(BINS)]
    for t, stop, k in union:
        b = min(int(t / width), BINS - 1)
        while t < stop and b < BINS:
            edge = min(stop, (b + 1) * width)
            busy[b][k] = busy[b].get(k, 0) + (edge - t)
            t, b = edge, b + 1
    out = []
    for b, by_kernel in enumerate(busy):
        if by_kernel:
            k = max(by_kernel, key=by_kernel.get)
            out.append((b * width, width, min(1.0, sum(by_kernel.values()) / width), k))
    return out


LANE_ORDER = ["sxe", "vxe", "dma", "host", "esl", "hbm"]


def lane_of(track_name):
    """The lane a trace track is drawn in: an engine's in-flight slots ("dma #1") share the
    engine's lane, and every HBM channel group ("hbm ch0-3") one "hbm" lane, so a run has a
    handful of lanes in the same order in every panel."""
    base = track_name.split(" #")[0]
    return "hbm" if base.startswith("hbm") else base


def lane_key(lane):
    return (LANE_ORDER.index(lane) if lane in LANE_ORDER else len(LANE_ORDER), lane)


def timeline(traces, out_dir, classes=None, name="timeline.png"):
    """classes: kernel name -> op class, from the runs (else from the kernel's name)."""
    usable = []
    for t in traces:
        slices = [e for e in t.events if e.get("ph") == "X" and "ts" in e and "dur" in e]
        if slices:
            usable.append((t, slices))
    if not usable:
        raise NoData("no trace with slices (ph \"X\") was given; record one with `lpu run ... --trace FILE`")
    usable = usable[:MAX_TRACES]
    end = max(max(e["ts"] + e["dur"] for e in s) for _, s in usable)
    kernels = unique(e.get("cat") or e.get("args", {}).get("kernel", "") for _, s in usable for e in s)
    by_class = len(kernels) > BY_CLASS_ABOVE
    if by_class:
        # Per-layer kernel names (l0.o_proj_x24, l13.o_proj_x24) say little at LLM scale: slices
        # take their kernel's op class (from the runs' kernel lists when given, as in the time-per-
        # op-class plot; else from the node the kernel is named after; see plots_runs.OP_CLASSES).
        def cls(k):
            if not k:
                return ""
            return (classes or {}).get(k) or node_class(re.sub(r"_x\d+$", "", re.sub(r"^k\d+_", "", k)))
        usable = [(t, [dict(e, cat=cls(e.get("cat", ""))) for e in s]) for t, s in usable]
        colours = {c: plt.get_cmap("tab10").colors[i % 10] for i, c in enumerate(OP_CLASSES)}
    else:
        cmap = plt.get_cmap("tab20").colors
        colours = {k: cmap[i % 20] for i, k in enumerate(colour_map(kernels))}
    lanes_of = []
    for t, slices in usable:
        names = {e["tid"]: e["args"]["name"] for e in t.events
                 if e.get("ph") == "M" and e.get("name") == "thread_name" and "args" in e}
        by_lane = {}
        for e in slices:
            by_lane.setdefault(lane_of(names.get(e["tid"], "tid %s" % e["tid"])), []).append(e)
        lanes_of.append(by_lane)
    fig, axes = plt.subplots(len(usable), 1, figsize=(12, 1.2 + sum(0.55 * len(b) + 0.9 for b in lanes_of)),
                             sharex=True, squeeze=False)
    for ax, (t, slices), by_lane in zip(axes[:, 0], usable, lanes_of):
        tids = sorted(by_lane, key=lane_key)
        binned = len(slices) > EXACT_LIMIT
        for row, tid in enumerate(tids):
            mine = by_lane[tid]
            if binned:
                # One collection of rectangles per lane (one artist per bar would be slow),
                # each rising from the lane's baseline (the y axis is inverted).
                bars = occupancy(mine, end)
                base = row + 0.4
                verts = [[(x, base), (x + w, base), (x + w, base - 0.8 * f), (x, base - 0.8 * f)] for x, w, f, _ in bars]
                ax.add_collection(PolyCollection(verts, facecolors=[colours.get(k, "grey") for *_, k in bars],
                                                 linewidths=0))
                continue
            by_kernel = {}
            for e in mine:
                by_kernel.setdefault(e.get("cat", ""), []).append((e["ts"], e["dur"]))
            for k, spans in by_kernel.items():
                ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colours.get(k, "grey"))
        ax.set_yticks(range(len(tids)))
        labels = []
        for tid in tids:
            n = concurrency(by_lane[tid])
            labels.append(tid + ("\n(up to %d at once)" % n if n > 1 else ""))
        ax.set_yticklabels(labels)
        ax.set_ylim(-0.6, len(tids) - 0.4)
        ax.invert_yaxis()
        t_end = max(e["ts"] + e["dur"] for e in slices)
        ax.set_title("%s: %.3f µs, %d slices%s" % (t.label, t_end, len(slices),
                     " (binned: height = time busy in each 1/%d of the axis)" % BINS if binned else ""),
                     fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        mine = [k for k in unique(e.get("cat", "") for e in slices) if k]  # no blank entry for kernel-less slices
        if by_class:
            mine = [c for c in OP_CLASSES if c in mine]
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[k]) for k in mine[:10]]
        ax.legend(handles, mine[:10], title=("op class" if by_class else "kernel")
                  + (" (first 10 of %d)" % len(mine) if len(mine) > 10 else ""),
                  fontsize=6, title_fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1, 0].set_xlim(0, end * 1.01)
    axes[-1, 0].set_xlabel("time (µs)")
    fig.suptitle("Timeline per engine (same time scale for every run)")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # keep the title clear of the first panel
    return save(fig, out_dir, name, "Timeline",
                "One lane per engine (its in-flight slots together; all HBM channels in one lane), one slice "
                "per instruction, coloured by kernel (by op class when there are more than %d kernels), drawn from the Chrome trace-event files (open them in "
                "ui.perfetto.dev for detail: one track per in-flight slot there)." % BY_CLASS_ABOVE)
