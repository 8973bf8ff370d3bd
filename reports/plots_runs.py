"""Plots of individual runs: fusion comparison, engine utilisation, kernel time, roofline."""
import json
import os
import re

from plot_util import (NoData, byte_unit, colour_map, legend_outside, marker_map, number, plt, policy_colours, save,
                       time_unit, unique)


def fusion_bars(runs, out_dir, name="fusion.png", subtitle=""):
    """Latency and HBM traffic per workload, one bar per fusion policy."""
    runs = [r for r in runs if number(r.get("latency_us"))]
    if not runs:
        raise NoData("no run has latency_us")
    workloads = unique(r.workload for r in runs)
    policies = unique(r.fusion for r in runs)
    colours = policy_colours(policies)
    width = 0.8 / len(policies)
    # Units from the largest value, so a 50 ms step reads "50 ms", not "50000 µs".
    tdiv, tunit = time_unit(max(r.get("latency_us") for r in runs))
    bdiv, bunit = byte_unit(max(max(r.get("hbm_read_bytes", 0) + r.get("hbm_write_bytes", 0),
                                    r.get("compulsory_hbm_bytes") or 0) for r in runs))
    fig, (ax_l, ax_t) = plt.subplots(1, 2, figsize=(13, 4.5))
    for wi, w in enumerate(workloads):
        first = None
        for pi, p in enumerate(policies):
            r = next((r for r in runs if (r.workload, r.fusion) == (w, p)), None)
            if r is None:
                continue
            x = wi + (pi - (len(policies) - 1) / 2) * width
            lat = r.get("latency_us") / tdiv
            first = first or lat
            ax_l.bar(x, lat, width, color=colours[p], label=p if wi == 0 else None)
            ax_l.annotate("%.2fx" % (first / lat if lat else 0), (x, lat), ha="center", va="bottom", fontsize=8)
            rd, wr = r.get("hbm_read_bytes", 0) / bdiv, r.get("hbm_write_bytes", 0) / bdiv
            ax_t.bar(x, rd, width, color=colours[p], label=p if wi == 0 else None)
            ax_t.bar(x, wr, width, bottom=rd, color=colours[p], hatch="//", edgecolor="white")
            comp = r.get("compulsory_hbm_bytes")
            if number(comp):
                ax_t.plot([x - width / 2, x + width / 2], [comp / bdiv] * 2, color="black", lw=2,
                          label="compulsory traffic" if (wi, pi) == (0, 0) else None)
    for ax in (ax_l, ax_t):
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels(workloads)
        ax.set_xlabel("workload")
        ax.grid(axis="y", alpha=0.3)
    ax_l.set_ylabel("latency (%s)" % tunit)
    ax_l.set_title("Latency per fusion policy (label: speedup vs %s)" % policies[0] if len(policies) > 1
                   else "Latency (%s)" % policies[0])
    ax_l.margins(y=0.12)  # room for the speedup labels above the bars
    ax_t.set_ylabel("HBM traffic (%s, decimal)" % bunit)
    ax_t.set_title("HBM traffic: read (solid) + write (hatched)")
    legend_outside(ax_t, title="fusion")
    if subtitle:
        fig.suptitle(subtitle, fontsize=10)
    fig.tight_layout()
    title = "Fused vs unfused: latency and HBM traffic" if len(policies) > 1 else "Latency and HBM traffic"
    return save(fig, out_dir, name, title,
                "Bars per workload and fusion policy. The black line is the compulsory traffic "
                "(each input read once, each output written once)." + (" " + subtitle if subtitle else ""))


def engine_names(runs):
    names = []
    for r in runs:
        for k in r.flat:
            m = re.match(r"engines\.([^.]+)\.utilization$", k)
            if m:
                names.append(m.group(1))
    return unique(names)


def engine_utilisation(runs, out_dir, name="engines.png", subtitle=""):
    engines = engine_names(runs)
    if not engines:
        raise NoData("no run has engines.*.utilization")
    series = [(e, "engines.%s.utilization" % e) for e in engines]
    if any(number(r.get("hbm_bandwidth_utilization")) for r in runs):
        series.append(("HBM bandwidth", "hbm_bandwidth_utilization"))
    colours = colour_map(s for s, _ in series)
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(runs) + 3), 4.5))
    for si, (label, key) in enumerate(series):
        xs = [i + (si - (len(series) - 1) / 2) * width for i in range(len(runs))]
        ys = [100 * (r.get(key) or 0) for r in runs]
        ax.bar(xs, ys, width, color=colours[label], label=label)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r.label.replace(" / ", "\n") for r in runs], fontsize=8)
    ax.set_ylabel("useful work / peak work (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Engine utilisation per run" + (" (" + subtitle + ")" if subtitle else ""))
    legend_outside(ax, title="engine")
    ax.grid(axis="y", alpha=0.3)
    return save(fig, out_dir, name, "Per-engine utilisation",
                "Useful work over what the engine could do at its peak in the run's time: SXE MACs / "
                "(mac_trees x lanes x cycles), VXE element operations / (lanes x cycles), DMA bytes / HBM peak "
                "bytes; HBM bandwidth utilisation is (read + write) / (peak x latency). Busy time is in the JSON "
                "(engines.*.busy_fraction).")


# Op classes: one table for the report and the lpu binary (reports/op_classes.json: the
# rules, the order heaviest first, and why a fused kernel counts under its heaviest class).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_classes.json")) as _f:
    _OP_CLASS_TABLE = json.load(_f)
OP_CLASSES = _OP_CLASS_TABLE["order"]
OP_CLASS_RULES = [(c, p) for c, p in _OP_CLASS_TABLE["rules"]]  # first match wins
LAYER_PREFIX = _OP_CLASS_TABLE["layer_prefix"]


def node_class(node):
    name = re.sub(LAYER_PREFIX, "", node)
    for cls, pat in OP_CLASS_RULES:
        if re.search(pat, name):
            return cls
    return "other"


def kernel_op_class(kernel):
    nodes = kernel.get("nodes") or [re.sub(r"^k\d+_", "", kernel["name"])]
    return min((node_class(n) for n in nodes), key=OP_CLASSES.index)


def kernel_breakdown(runs, out_dir, name="kernels.png", subtitle=""):
    runs = [r for r in runs if r.kernels]
    if not runs:
        raise NoData("no run has a kernel list")
    colours = {c: plt.get_cmap("tab10").colors[i % 10] for i, c in enumerate(OP_CLASSES)}
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(runs) + 2.5))
    labelled = set()
    for i, r in enumerate(runs):
        clock = r.arch_value("clock_ghz", 1.0) or 1.0
        per_class = {}
        for k in r.kernels:
            c = kernel_op_class(k)
            per_class[c] = per_class.get(c, 0.0) + k.get("cycles", 0) / clock / 1e3
        left = 0.0
        for c in OP_CLASSES:
            us = per_class.get(c, 0.0)
            if us <= 0:
                continue
            ax.barh(i, us, left=left, color=colours[c], edgecolor="white", linewidth=0.5,
                    label=c if c not in labelled else None)
            labelled.add(c)
            left += us
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels([r.label for r in runs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("kernel time (µs)")
    ax.set_title("Time per op class" + (" (" + subtitle + ")" if subtitle else ""))
    legend_outside(ax, title="op class")
    ax.grid(axis="x", alpha=0.3)
    return save(fig, out_dir, name, "Time per op class",
                "Each bar is one run; each segment the time of its kernels of one op class (attention, FFN, norm, "
                "projection, LM head, ...), from each kernel's first issue to its last retirement, summed over the "
                "layers. A fused kernel counts under the heaviest class among its nodes, in the order "
                + ", ".join(OP_CLASSES) + ".")


def work_keys(runs):
    return unique(k for r in runs for k in r.flat if k.startswith("work.") and number(r.get(k)) and r.get(k) > 0)


def roofs(runs):
    """Distinct roofs over the runs' architectures: (HBM GB/s, VXE peak) pairs, SXE peaks."""
    mem, sxe = [], []
    for r in runs:
        bw, clk, lanes = r.arch_value("hbm.bandwidth_gbps"), r.arch_value("clock_ghz"), r.arch_value("vxe.lanes")
        if number(bw) and number(clk) and number(lanes) and (bw, lanes * clk) not in mem:
            mem.append((bw, lanes * clk))
        trees, sl = r.arch_value("sxe.mac_trees"), r.arch_value("sxe.lanes")
        if number(trees) and number(sl) and number(clk) and trees * sl * 2 * clk not in sxe:
            sxe.append(trees * sl * 2 * clk)
    return sorted(mem), sorted(sxe)


def roofline(runs, out_dir, name="roofline.png", colour_by="workload"):
    keys = work_keys(runs)
    if not keys:
        raise NoData("the runs have no work.* operation counts (written by lpu run --json since the reports landed)")
    pts = []
    for r in runs:
        traffic = (r.get("hbm_read_bytes") or 0) + (r.get("hbm_write_bytes") or 0)
        lat_ns = (r.get("latency_us") or 0) * 1e3
        for k in keys:
            ops = r.get(k)
            if number(ops) and ops > 0 and traffic > 0 and lat_ns > 0:
                pts.append((r, k, ops / traffic, ops / lat_ns))
    if not pts:
        raise NoData("no run has both operations and HBM traffic")
    mem, sxe = roofs(runs)
    if not mem:
        raise NoData("the runs carry no arch.hbm.bandwidth_gbps / clock_ghz / vxe.lanes for the roofs")
    xs = [p[2] for p in pts]
    peaks = [pk for _, pk in mem] + sxe
    lo = min(min(xs), min(pk / bw for bw, pk in mem)) / 4
    hi = max(max(xs), max(max(peaks) / bw for bw, _ in mem)) * 4
    fig, ax = plt.subplots(figsize=(9, 6))
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    roof_colours = plt.get_cmap("Greys")
    shown = mem[:8]
    top = max(peaks)
    for i, (bw, peak) in enumerate(shown):
        col = roof_colours(0.45 + 0.5 * i / max(1, len(shown) - 1))
        ax.plot(grid, [min(bw * x, peak) for x in grid], color=col,
                lw=1.5, label="roof: HBM %g GB/s, VXE %g elem-op/ns" % (bw, peak))
        # The memory slope continues up to the highest roof (the SXE's), so SXE points sit
        # under a drawn memory roof rather than above every solid line.
        if top > peak:
            ax.plot([x for x in grid if peak <= bw * x <= top], [bw * x for x in grid if peak <= bw * x <= top],
                    color=col, lw=1.5, ls=":")
    for i, peak in enumerate(sxe[:4]):
        ax.axhline(peak, color="tab:purple", ls="--", lw=1, label="SXE peak %g FLOP/ns" % peak)
    groups = unique(getattr(p[0], colour_by) for p in pts)
    colours = colour_map(groups)
    markers = marker_map(unique(p[0].fusion for p in pts))
    done = set()
    for r, k, x, y in pts:
        g = getattr(r, colour_by)
        lab = "%s / %s" % (g, r.fusion)
        ax.scatter(x, y, color=colours[g], marker=markers[r.fusion], s=40, zorder=3,
                   edgecolor="black" if k == "work.vxe_elem_ops" else "none",
                   label=lab if lab not in done else None)
        done.add(lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("operational intensity (operations / HBM byte)")
    ax.set_ylabel("achieved throughput (operations / ns = Gop/s)")
    ax.set_title("Roofline (%s)" % ", ".join(k.replace("work.", "") for k in keys))
    ax.grid(True, which="both", alpha=0.2)
    legend_outside(ax, fontsize=7)
    return save(fig, out_dir, name, "Roofline",
                "Each point is one run: its operations (%s) per HBM byte moved against operations per ns "
                "achieved. Roofs: peak HBM bandwidth (arch.hbm.bandwidth_gbps) times intensity; VXE peak "
                "vxe.lanes x clock_ghz element ops/ns; SXE peak sxe.mac_trees x sxe.lanes x 2 x clock_ghz FLOP/ns. "
                "Fusion raises intensity (less traffic for the same work)." % ", ".join(keys)
                + (" %d more roof(s) not drawn." % (len(mem) - len(shown)) if len(mem) > len(shown) else ""))



ENERGY_ENGINES = ["hbm", "sxe", "vxe", "lmu", "dma", "esl", "isu"]  # sim/config energy_engines(), in order


def energy_by_engine(runs, out_dir, name="energy.png", subtitle=""):
    """Energy of each run split per engine: dynamic (counted events x the config's energies,
    solid) and static (power x time, hatched); per token when every run is an LLM step."""
    runs = [r for r in runs if number(r.get("energy.total_j"))]
    if not runs:
        raise NoData("no run has energy statistics (energy.total_j): the arch config needs an energy section "
                     "(docs/config.md)")
    per_token = all(number(r.get("llm.tokens_per_step")) for r in runs)
    shown = [e for e in ENERGY_ENGINES if any((r.get("energy.engines.%s.total_j" % e) or 0) > 0 for r in runs)]
    colours = colour_map(ENERGY_ENGINES)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(runs) + 3), 4.5))
    for i, r in enumerate(runs):
        div = r.get("llm.tokens_per_step") if per_token else 1
        bottom = 0
        for e in shown:
            for part, hatch in (("dynamic_j", None), ("static_j", "//")):
                v = (r.get("energy.engines.%s.%s" % (e, part)) or 0) * 1e3 / div
                if v > 0:
                    ax.bar(i, v, 0.6, bottom=bottom, color=colours[e], hatch=hatch, edgecolor="white")
                    bottom += v
        ax.annotate("%.4g" % bottom, (i, bottom), ha="center", va="bottom", fontsize=8)
    for e in shown:  # legend: one entry per engine
        ax.bar([0], [0], 0, color=colours[e], label=e)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(["%s\n%s" % (r.workload, r.fusion) for r in runs], fontsize=8)
    ax.set_ylabel("energy per token (mJ)" if per_token else "energy per run (mJ)")
    ax.set_title("Energy by engine: dynamic (solid) + static (hatched)")
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.1)
    legend_outside(ax, title="engine")
    if subtitle:
        fig.suptitle(subtitle, fontsize=10)
    fig.tight_layout()
    return save(fig, out_dir, name, "Energy by engine",
                "Per run, %s: each engine's dynamic energy (the simulator's counted events x the config's per-event "
                "energies: HBM bits, SXE MACs, VXE ops by class, LMU bytes, ESL bits) solid, and its static power x "
                "the run's time hatched; the label is the total. The config's YAML comments say which energies are "
                "sourced and which are assumptions." % ("per token" if per_token else "per run")
                + (" " + subtitle if subtitle else ""))
