"""Plots of individual runs: fusion comparison, engine utilisation, kernel time, roofline."""
import re

from plot_util import NoData, colour_map, marker_map, number, plt, save, unique

MB = 1e6


def fusion_bars(runs, out_dir, name="fusion.png", subtitle=""):
    """Latency and HBM traffic per workload, one bar per fusion policy."""
    runs = [r for r in runs if number(r.get("latency_us"))]
    if not runs:
        raise NoData("no run has latency_us")
    workloads = unique(r.workload for r in runs)
    policies = unique(r.fusion for r in runs)
    colours = colour_map(policies)
    width = 0.8 / len(policies)
    fig, (ax_l, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    for wi, w in enumerate(workloads):
        first = None
        for pi, p in enumerate(policies):
            r = next((r for r in runs if (r.workload, r.fusion) == (w, p)), None)
            if r is None:
                continue
            x = wi + (pi - (len(policies) - 1) / 2) * width
            lat = r.get("latency_us")
            first = first or lat
            ax_l.bar(x, lat, width, color=colours[p], label=p if wi == 0 else None)
            ax_l.annotate("%.2fx" % (first / lat if lat else 0), (x, lat), ha="center", va="bottom", fontsize=8)
            rd, wr = r.get("hbm_read_bytes", 0) / MB, r.get("hbm_write_bytes", 0) / MB
            ax_t.bar(x, rd, width, color=colours[p], label=p if wi == 0 else None)
            ax_t.bar(x, wr, width, bottom=rd, color=colours[p], hatch="//", edgecolor="white")
            comp = r.get("compulsory_hbm_bytes")
            if number(comp):
                ax_t.plot([x - width / 2, x + width / 2], [comp / MB] * 2, color="black", lw=2,
                          label="compulsory traffic" if (wi, pi) == (0, 0) else None)
    for ax in (ax_l, ax_t):
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels(workloads)
        ax.set_xlabel("workload")
        ax.grid(axis="y", alpha=0.3)
    ax_l.set_ylabel("latency (µs)")
    ax_l.set_title("Latency per fusion policy (label: speedup vs %s)" % policies[0])
    ax_l.legend(title="fusion")
    ax_t.set_ylabel("HBM traffic (MB, 1e6 bytes)")
    ax_t.set_title("HBM traffic: read (solid) + write (hatched)")
    ax_t.legend(title="fusion")
    if subtitle:
        fig.suptitle(subtitle, fontsize=10)
    return save(fig, out_dir, name, "Fused vs unfused: latency and HBM traffic",
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
    ax.set_ylabel("busy time / latency (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Engine utilisation per run" + (" (" + subtitle + ")" if subtitle else ""))
    ax.legend(title="engine", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return save(fig, out_dir, name, "Per-engine utilisation",
                "Busy cycles / total cycles per engine (DMA: per DMA engine), and HBM bandwidth "
                "utilisation ((read + write) / (peak x latency)).")


def kernel_class(kernel):
    """k12_gelu_erf_1 -> gelu_erf: index and numbering dropped, so the same op in different
    runs shares a colour. A fused kernel (several graph nodes) keeps its full name."""
    name = re.sub(r"^k\d+_", "", kernel["name"])
    if len(kernel.get("nodes", [])) > 1:
        return name
    return re.sub(r"(_\d+)+$", "", name)


def kernel_breakdown(runs, out_dir, name="kernels.png", subtitle=""):
    runs = [r for r in runs if r.kernels]
    if not runs:
        raise NoData("no run has a kernel list")
    # One segment per kernel, coloured by class; too many classes fold into "other".
    totals = {}
    for r in runs:
        for k in r.kernels:
            c = kernel_class(k)
            totals[c] = totals.get(c, 0) + k.get("cycles", 0)
    classes = sorted(totals, key=lambda c: -totals[c])
    keep = set(classes[:12])
    colours = colour_map([c for c in classes if c in keep] + ["other"])
    colours = {c: plt.get_cmap("tab20").colors[i % 20] for i, c in enumerate(list(colours))}
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(runs) + 2.5))
    labelled = set()
    for i, r in enumerate(runs):
        clock = r.arch_value("clock_ghz", 1.0) or 1.0
        left = 0.0
        for k in r.kernels:
            c = kernel_class(k) if kernel_class(k) in keep else "other"
            us = k.get("cycles", 0) / clock / 1e3
            ax.barh(i, us, left=left, color=colours[c], edgecolor="white", linewidth=0.5,
                    label=c if c not in labelled else None)
            labelled.add(c)
            left += us
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels([r.label for r in runs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("kernel time (µs), kernels in program order")
    ax.set_title("Time per kernel" + (" (" + subtitle + ")" if subtitle else ""))
    ax.legend(title="kernel class", fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(axis="x", alpha=0.3)
    return save(fig, out_dir, name, "Time breakdown per kernel",
                "Each bar is one run; each segment one kernel (first issue to last retirement), "
                "coloured by kernel class (the kernel's name without its index).")


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
    for i, (bw, peak) in enumerate(shown):
        ax.plot(grid, [min(bw * x, peak) for x in grid], color=roof_colours(0.45 + 0.5 * i / max(1, len(shown) - 1)),
                lw=1.5, label="roof: HBM %g GB/s, VXE %g elem-op/ns" % (bw, peak))
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
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save(fig, out_dir, name, "Roofline",
                "Each point is one run: its operations (%s) per HBM byte moved against operations per ns "
                "achieved. Roofs: peak HBM bandwidth (arch.hbm.bandwidth_gbps) times intensity; VXE peak "
                "vxe.lanes x clock_ghz element ops/ns; SXE peak sxe.mac_trees x sxe.lanes x 2 x clock_ghz FLOP/ns. "
                "Fusion raises intensity (less traffic for the same work)." % ", ".join(keys)
                + (" %d more roof(s) not drawn." % (len(mem) - len(shown)) if len(mem) > len(shown) else ""))
