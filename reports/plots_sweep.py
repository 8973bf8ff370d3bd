"""Plots across the points of a sweep: metric vs swept key, heatmap, Pareto front."""
import matplotlib.ticker as ticker

from plot_util import NoData, colour_map, fmt_value, legend_outside, marker_map, number, plt, policy_colours, save, unique
from report_data import InputProblem

LATENCY = ("latency_us", "latency (µs)")
HBM_UTIL = ("hbm_bandwidth_utilization", "HBM bandwidth utilisation (%)")
# (column, label, scale): the two rows of "Metrics vs KEY"; a serving sweep's points (`command:
# serve`, docs/sweeps.md) are `lpu serve` runs, with goodput and tail latency instead.
RUN_METRICS = [LATENCY + (1,), HBM_UTIL + (100,)]
SERVE_METRICS = [("summary.slo.goodput_rps", "goodput (req/s meeting both SLOs)", 1),
                 ("summary.ttft_s.p99", "TTFT p99 (ms)", 1e3)]


def serving(sweep):
    return sweep.manifest.get("command") == "serve"


def _axis_order(sweep, key, values):
    """Values in the sweep file's order (numbers sorted)."""
    vals = [v for v in sweep.axis_values.get(key, []) if v in values] or unique(values)
    return sorted(vals) if all(number(v) for v in vals) else vals


def _panels(n):
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    return rows, cols


def metric_vs_axis(sweep, runs, key, out_dir, name):
    metrics = SERVE_METRICS if serving(sweep) else RUN_METRICS
    runs = [r for r in runs if key in r.point and number(r.get(metrics[0][0]))]
    if not runs:
        raise NoData("no successful point has %s" % key)
    workloads = unique(r.workload for r in runs)
    policies = unique(r.fusion for r in runs)
    others = [a for a in sweep.axes if a != key]
    zipped = sweep.manifest.get("combine") == "zip"
    # A line per policy and combination of the other axes while that stays readable; beyond
    # that the other axes are held at the reference point.
    combos = [()] if zipped else unique(tuple(r.point[a] for a in others) for r in runs)
    held = ""
    if len(combos) * len(policies) > 8:
        ref = tuple(sweep.reference.get(a) for a in others)
        runs = [r for r in runs if tuple(r.point[a] for a in others) == ref]
        combos = [ref]
        held = "others at the reference: " + ", ".join("%s=%s" % (a, fmt_value(v)) for a, v in zip(others, ref))
    values = _axis_order(sweep, key, [r.point[key] for r in runs])
    numeric = all(number(v) for v in values)
    colours = policy_colours(policies)
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.5 * len(workloads) + 1.5, 7), squeeze=False)
    for wi, w in enumerate(workloads):
        for mi, (metric, ylabel, scale) in enumerate(metrics):
            ax = axes[mi, wi]
            for pi, p in enumerate(policies):
                for ci, combo in enumerate(combos):
                    pts = {}
                    for r in runs:
                        if r.workload == w and r.fusion == p and (zipped or tuple(r.point[a] for a in others) == combo):
                            pts[r.point[key]] = r.get(metric)
                    xs = [v for v in values if v in pts and number(pts[v])]
                    if not xs:
                        continue
                    ys = [pts[v] * scale for v in xs]
                    label = p
                    if others and not zipped and len(combos) > 1:
                        label += ", " + ", ".join("%s=%s" % (a, fmt_value(v)) for a, v in zip(others, combo))
                    xplot = xs if numeric else [values.index(v) for v in xs]
                    ax.plot(xplot, ys, marker="o", color=colours[p], ls=styles[ci % len(styles)],
                            label=label if wi == 0 and mi == 0 else None)
            if numeric and min(values) > 0 and max(values) / min(values) >= 8:
                ax.set_xscale("log", base=2)
            if not numeric:
                ax.set_xticks(range(len(values)))
                ax.set_xticklabels([fmt_value(v) for v in values])
            ax.set_xlabel(key)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            if mi == 0:
                ax.set_title(w)
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, max(1, len(policies) * len(combos))),
               fontsize=8, title="fusion" + (", other axes" if len(combos) > 1 else ""))
    extra = ("zipped with " + ", ".join(others)) if zipped and others else held
    what = ("Goodput and p99 TTFT", "Goodput (top) and p99 time to first token (bottom)") if serving(sweep) else \
        ("Latency and HBM utilisation", "Latency (top) and HBM bandwidth utilisation (bottom)")
    fig.suptitle("%s vs %s%s" % (what[0], key, " (" + extra + ")" if extra else ""))
    fig.tight_layout()
    return save(fig, out_dir, name, "Metrics vs %s" % key, "%s per workload as %s varies. %s" % (what[1], key, extra))


def heatmap(sweep, runs, out_dir, name="heatmap.png"):
    runs = [r for r in runs if number(r.get("latency_us"))]
    if not runs:
        raise NoData("no successful point")
    workloads = unique(r.workload for r in runs)
    policies = unique(r.fusion for r in runs)
    product = sweep.manifest.get("combine") != "zip"
    if product and len(sweep.axes) >= 2:
        a, b = sweep.axes[0], sweep.axes[1]
        rest = sweep.axes[2:]
        ref = tuple(sweep.reference.get(k) for k in rest)
        runs = [r for r in runs if tuple(r.point[k] for k in rest) == ref]
        panels = [(w, p) for w in workloads for p in policies]
        xs, ys = _axis_order(sweep, a, [r.point[a] for r in runs]), _axis_order(sweep, b, [r.point[b] for r in runs])
        xlabel, ylabel = a, b

        def cell(w, p, x, y):
            return next((r.get("latency_us") for r in runs if (r.workload, r.fusion, r.point[a], r.point[b]) == (w, p, x, y)), None)
        held = ", ".join("%s=%s" % (k, fmt_value(v)) for k, v in zip(rest, ref))
    else:
        # One axis (or zipped axes, or none): the arch points against the fusion policies.
        def point_label(r):
            return ", ".join("%s=%s" % (k, fmt_value(r.point[k])) for k in sweep.axes) or r.workload
        panels = [(w, None) for w in workloads] if sweep.axes else [(None, None)]
        xs = policies
        ys = unique(point_label(r) for r in runs)
        xlabel, ylabel = "fusion policy", " + ".join(sweep.axes) or "workload"

        def cell(w, p, x, y):
            return next((r.get("latency_us") for r in runs
                         if (w is None or r.workload == w) and r.fusion == x and point_label(r) == y), None)
        held = ""
    rows, cols = _panels(len(panels))
    label_in = 0.07 * max(len(fmt_value(y)) for y in ys)  # room for long y tick labels
    fig, axes = plt.subplots(rows, cols, figsize=((4.8 + label_in) * cols + 1, 0.45 * len(ys) * rows + 2.8 * rows),
                             squeeze=False)
    # One colour scale for every panel, so equal colours mean equal latency across panels.
    grids = [[[cell(w, p, x, y) for x in xs] for y in ys] for (w, p) in panels]
    vals = [v for g in grids for row in g for v in row if v is not None]
    vmin, vmax = (min(vals), max(vals)) if vals else (0, 1)
    for i, (w, p) in enumerate(panels):
        ax = axes[i // cols, i % cols]
        grid = grids[i]
        masked = [[float("nan") if v is None else v for v in row] for row in grid]
        im = ax.imshow(masked, cmap="viridis_r", aspect="auto", origin="lower", vmin=vmin, vmax=vmax)
        for yi, row in enumerate(grid):
            for xi, v in enumerate(row):
                if v is not None:
                    bright = vals and v > (min(vals) + max(vals)) / 2
                    ax.text(xi, yi, "%.4g" % v, ha="center", va="center", fontsize=7,
                            color="white" if bright else "black")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([fmt_value(x) for x in xs], fontsize=8)
        ax.set_yticks(range(len(ys)))
        ax.set_yticklabels([fmt_value(y) for y in ys], fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(" / ".join(s for s in (w, p) if s) or "all points", fontsize=10)
        fig.colorbar(im, ax=ax, label="latency (µs)")
    for j in range(len(panels), rows * cols):
        axes[j // cols, j % cols].axis("off")
    fig.suptitle("Latency heatmap" + (" (" + held + ")" if held else ""))
    fig.tight_layout()
    return save(fig, out_dir, name, "Latency heatmap",
                "Latency in µs (darker is slower; one colour scale for every panel) over %s and %s%s."
                % (xlabel, ylabel, "; " + held if held else ""))


COST_RESOURCES = [
    ("HBM bandwidth", lambda a: a.get("hbm", {}).get("bandwidth_gbps")),
    ("LMU size", lambda a: a.get("lmu", {}).get("capacity_kib")),
    ("VXE lanes", lambda a: a.get("vxe", {}).get("lanes")),
    ("SXE MACs", lambda a: (a.get("sxe", {}).get("mac_trees") or 0) * (a.get("sxe", {}).get("lanes") or 0) or None),
]


def cost_function(sweep, runs, cost_key):
    if cost_key:
        def cost(r):
            v = r.get(cost_key, r.point.get(cost_key))
            return v if number(v) else None
        if runs and not any(cost(r) is not None for r in runs):
            columns = sorted({k for r in runs for k, v in list(r.flat.items()) + list(r.point.items()) if number(v)})
            raise InputProblem("--cost %s: not a numeric column of the results; numeric columns: %s"
                               % (cost_key, ", ".join(columns)))
        return cost, cost_key, "the column %s" % cost_key
    base = sweep.manifest.get("base_arch") or {}
    used = [(n, f) for n, f in COST_RESOURCES if number(f(base)) and f(base) > 0]
    if not used:
        raise NoData("the sweep manifest has no base_arch to normalise the cost proxy; pass --cost COLUMN")

    def proxy(r):
        vals = [f(r.arch) for _, f in used]
        if not all(number(v) for v in vals):
            return None
        return sum(v / f(base) for v, (_, f) in zip(vals, used)) / len(used)
    names = ", ".join(n for n, _ in used)
    return proxy, "relative hardware cost (base config = 1)", \
        "the mean of %s, each relative to the base config (a crude proxy; choose a column with --cost)" % names


def _pareto_front(pts):
    """The Pareto-optimal (cost, latency) pairs of `pts`, cheapest first: no cheaper point is as fast."""
    front, best = [], float("inf")
    for c, lat in sorted(pts):
        if lat < best:
            front.append((c, lat))
            best = lat
    return front


def _draw_pareto(pts, xlabel, ylabel, title):
    """Every point (cost, latency, run) coloured by workload with a marker per fusion policy, and
    each workload's front as a step line through outlined points."""
    workloads = unique(r.workload for _, _, r in pts)
    colours = colour_map(workloads)
    markers = marker_map(unique(r.fusion for _, _, r in pts))
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for c, lat, r in pts:
        ax.scatter(c, lat, color=colours[r.workload], marker=markers[r.fusion], alpha=0.45, s=30)
    for f, m in markers.items():  # legend entries for the markers, in a neutral colour
        ax.scatter([], [], color="grey", marker=m, label="fusion %s" % f)
    for w in workloads:
        front = _pareto_front([(c, lat) for c, lat, r in pts if r.workload == w])
        ax.step([c for c, _ in front], [lat for _, lat in front], where="post", color=colours[w], lw=2,
                label="front: %s" % w)
        on_front = set(front)
        for c, lat, r in pts:  # outlined, in the point's own marker (its fusion policy)
            if r.workload == w and (c, lat) in on_front:
                ax.scatter(c, lat, color=colours[w], marker=markers[r.fusion], s=70, edgecolor="black", zorder=3)
    ax.set_yscale("log")
    # A log axis spanning less than a decade gets one major tick at most: label the minor
    # ticks too (plain numbers), so the axis can be read.
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
    ax.yaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.2)
    return fig, ax


def pareto(sweep, runs, out_dir, cost_key="", name="pareto.png"):
    cost, xlabel, what = cost_function(sweep, runs, cost_key)
    pts = [(cost(r), r.get("latency_us"), r) for r in runs]
    pts = [p for p in pts if p[0] is not None and number(p[1])]
    if not pts:
        raise NoData("no successful point has a cost (%s) and a latency" % xlabel)
    fig, ax = _draw_pareto(pts, xlabel, "latency (µs)", "Pareto front: latency vs cost (lower left is better)")
    if len({c for c, _, _ in pts}) == 1:
        ax.annotate("every point has the same cost; choose another with --cost", (0.5, 0.95),
                    xycoords="axes fraction", ha="center", fontsize=9)
    legend_outside(ax)
    return save(fig, out_dir, name, "Pareto front (latency vs cost)",
                "Every successful point; outlined points are Pareto-optimal per workload (no cheaper point "
                "is as fast). Cost: %s." % what)


# Energy as the cost: per token where every point is an LLM step (the `llm` statistics), else per
# run; latency likewise per token or per run. Columns from the simulator's `energy` statistics.
ENERGY_COSTS = [("llm.j_per_token", "llm.ms_per_token", "energy per token (mJ)", "latency per token (ms)", 1e3),
                ("energy.total_j", "latency_us", "energy per run (mJ)", "latency (µs)", 1e3)]


def energy_columns(runs):
    """(energy column, latency column, x label, y label, scale) of the first kind every
    successful point has; NoData when none has energy (configs without an energy section)."""
    for cost_col, lat_col, xlabel, ylabel, scale in ENERGY_COSTS:
        if runs and all(number(r.get(cost_col)) and number(r.get(lat_col)) for r in runs):
            return cost_col, lat_col, xlabel, ylabel, scale
    raise NoData("the results have no energy statistics for every point (energy.total_j): the arch configs "
                 "need an energy section (docs/config.md)")


def pareto_energy(sweep, runs, out_dir, name="pareto_energy.png"):
    """Latency vs energy: which points no other point beats on both (the simulator's counted
    events x the config's energies, plus static power x time)."""
    cost_col, lat_col, xlabel, ylabel, scale = energy_columns(runs)
    pts = [(r.get(cost_col) * scale, r.get(lat_col), r) for r in runs]
    fig, ax = _draw_pareto(pts, xlabel, ylabel, "Pareto front: latency vs energy (lower left is better)")
    costs = [c for c, _, _ in pts if c > 0]
    if costs and max(costs) > 10 * min(costs):  # workloads of different sizes: each cluster stays legible
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    legend_outside(ax)
    front = sum(len(_pareto_front([(c, lat) for c, lat, r in pts if r.workload == w]))
                for w in unique(r.workload for _, _, r in pts))
    return save(fig, out_dir, name, "Pareto front (latency vs energy)",
                "Every successful point; outlined points (%d of %d) are Pareto-optimal per workload: no point "
                "uses less energy and is as fast. Energy: the column %s (events counted by the simulator x the "
                "config's energies, plus static power x time); latency: %s." % (front, len(pts), cost_col, lat_col))
BATCH_KEY = "workload.batch"


def batch_roofline(sweep, runs, out_dir, name="batch_roofline.png"):
    """Tokens/s and step latency vs batch against the step's two roofs (docs/workloads.md):
    memory (compulsory HBM bytes at peak bandwidth) and compute (SXE MACs at peak). Other axes
    are held at the reference point."""
    others = [a for a in sweep.axes if a != BATCH_KEY]
    ref = tuple(sweep.reference.get(a) for a in others)
    runs = [r for r in runs if BATCH_KEY in r.point and number(r.get("llm.tokens_per_s"))
            and tuple(r.point[a] for a in others) == ref]
    if not runs:
        raise NoData("no successful point of a built-in LLM has %s" % BATCH_KEY)
    workloads = unique(r.workload for r in runs)
    policies = unique(r.fusion for r in runs)
    colours = policy_colours(policies)
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.8 * len(workloads) + 1.5, 7.5), squeeze=False)
    for wi, w in enumerate(workloads):
        wr = [r for r in runs if r.workload == w]
        batches = sorted(unique(r.point[BATCH_KEY] for r in wr))
        # The roofs: the same for every policy of a batch (they count the step, not its schedule).
        roof = {}
        for r in wr:
            roof.setdefault(r.point[BATCH_KEY], (r.get("llm.memory_roof_tokens_per_s"), r.get("llm.compute_roof_tokens_per_s"),
                                                 r.get("llm.tokens_per_step")))
        xs = [b for b in batches if all(number(v) and v > 0 for v in roof[b])]
        top, bottom = axes[0, wi], axes[1, wi]
        for p in policies:
            pts = {r.point[BATCH_KEY]: r for r in wr if r.fusion == p}
            px = [b for b in batches if b in pts]
            top.plot(px, [pts[b].get("llm.tokens_per_s") for b in px], marker="o", color=colours[p], label=p)
            bottom.plot(px, [pts[b].get("latency_us") for b in px], marker="o", color=colours[p], label=p)
        for idx, (label, style) in enumerate([("memory roof (HBM bytes / bandwidth)", "--"),
                                              ("compute roof (SXE MACs / peak)", ":")]):
            top.plot(xs, [roof[b][idx] for b in xs], ls=style, color="black", label=label)
            # A roof on tokens/s is a floor on the step's latency: tokens per step / roof.
            bottom.plot(xs, [roof[b][2] / roof[b][idx] * 1e6 for b in xs], ls=style, color="black", label=label)
        cross = [b for b in xs if roof[b][1] < roof[b][0]]
        for ax in (top, bottom):
            if cross:
                ax.axvline(cross[0], color="grey", alpha=0.4)
            if batches and min(batches) > 0 and max(batches) / min(batches) >= 8:
                ax.set_xscale("log", base=2)
                ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
            ax.set_xlabel("batch (sequences per step)")
            ax.grid(alpha=0.3)
        top.set_yscale("log")
        bottom.set_yscale("log")
        top.set_ylabel("tokens/s")
        bottom.set_ylabel("step latency (µs)")
        top.set_title(w + ("" if not cross else " (compute-bound from batch %s)" % fmt_value(cross[0])))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(labels)), fontsize=8)
    held = ", ".join("%s=%s" % (a, fmt_value(v)) for a, v in zip(others, ref))
    fig.suptitle("Tokens/s and latency vs batch against the roofs" + (" (%s)" % held if held else ""))
    fig.tight_layout()
    return save(fig, out_dir, name, "Batch roofline",
                "Tokens/s (top) and step latency (bottom) per workload and policy as the batch grows, against the "
                "memory roof (the step's compulsory HBM bytes at peak bandwidth: the weights are read once per step "
                "whatever the batch, so it rises with the batch) and the compute roof (the step's SXE MACs at the "
                "SXE's peak). The grey line marks the first batch where the compute roof is the lower one.%s"
                % (" Other axes at the reference point: " + held + "." if held else ""))


def sweep_plots(sweep, runs, out_dir, cost_key=""):
    """Every sweep plot, as (title, callable) so the caller can record failures per plot."""
    plots = []
    for i, key in enumerate(sweep.axes):
        safe = "".join(c if c.isalnum() else "_" for c in key)
        plots.append(("Metrics vs %s" % key,
                      lambda key=key, safe=safe: metric_vs_axis(sweep, runs, key, out_dir, "sweep_%s.png" % safe)))
    if BATCH_KEY in sweep.axes:
        plots.append(("Batch roofline", lambda: batch_roofline(sweep, runs, out_dir)))
    plots.append(("Latency heatmap", lambda: heatmap(sweep, runs, out_dir)))
    plots.append(("Pareto front", lambda: pareto(sweep, runs, out_dir, cost_key)))
    plots.append(("Pareto front: latency vs energy", lambda: pareto_energy(sweep, runs, out_dir)))
    return plots

