"""Plots and tables of `lpu serve --json` results (docs/serving.md): latency CDFs with the SLOs,
batch size, KV-cache use and queue length over time per replica, and a Gantt of sampled
requests. A serve JSON is result_json (summary, replicas with step series, every request) plus
optional keys the CLI adds (kind, workload, arch, cost_model, step_cost_error, cluster)."""
import os

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from plot_util import NoData, colour_map, fmt_value, legend_outside, number, save

PHASE_COLOURS = {"queueing": "#bbbbbb", "prefill": "#ff7f0e", "KV transfer": "#9467bd", "decode": "#1f77b4"}
GANTT_REQUESTS = 60   # rows of the Gantt: more would not be legible
BIN_ABOVE = 4000      # steps per replica beyond which the time series are binned
BINS = 1500


def name_of(v):
    """workload/arch: a name, or an object with one."""
    if isinstance(v, dict):
        return str(v.get("name", "?"))
    return str(v) if v not in (None, "") else "?"


def labels(serves):
    """One label per serve JSON: "workload on arch", with the file name when two would read alike."""
    base = ["%s on %s" % (name_of(s.data.get("workload")), name_of(s.data.get("arch"))) for s in serves]
    return [b if base.count(b) == 1 else "%s (%s)" % (b, os.path.basename(s.path)) for b, s in zip(base, serves)]


def slo_ms(j, key):
    """The SLO on `key` (ttft_ms, tpot_ms) the run was measured against: the summary's, else the cluster's."""
    for node in ((j.get("summary") or {}).get("slo"), (j.get("cluster") or {}).get("slo")):
        if isinstance(node, dict) and number(node.get(key)) and node[key] > 0:
            return node[key]
    return None


def completed(j):
    return [r for r in j.get("requests") or [] if r.get("completed")]


# ---- latency CDFs ------------------------------------------------------------------------------

CDF_PANELS = [("ttft_s", "time to first token (TTFT)", "ttft_ms"),
              ("tpot_s", "time per output token (TPOT)", "tpot_ms"),
              ("e2e_s", "end-to-end latency", None), ("queueing_s", "queueing delay", None)]


def seconds_unit(peak_s):
    """(scale from seconds, unit) so that the largest value reads between 1 and ~2000."""
    return (1.0, "s") if peak_s >= 2 else (1e3, "ms") if peak_s >= 2e-3 else (1e6, "µs")


def cdf_panel(ax, serves, names, colours, key, title, slo_key):
    values = {n: np.sort([r[key] for r in completed(s.data) if number(r.get(key))]) for s, n in zip(serves, names)}
    peak = max((v[-1] for v in values.values() if len(v)), default=0)
    slos = sorted({slo_ms(s.data, slo_key) for s in serves} - {None}) if slo_key else []
    # An SLO far beyond every value (a small model against LLM targets) would squash the curves
    # against the axis: it is named in the panel instead of drawn.
    far = [ms for ms in slos if peak > 0 and ms / 1e3 > 5 * peak]
    shown = [ms for ms in slos if ms not in far]
    scale, unit = seconds_unit(max([peak] + [ms / 1e3 for ms in shown]))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("%s (%s)" % (title.split(" (")[0], unit))
    ax.set_ylabel("share of completed requests")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    for y in (0.5, 0.9, 0.99):
        ax.axhline(y, color="#999", lw=0.6, ls=":")
    if not any(len(v) for v in values.values()):
        ax.text(0.5, 0.5, "no completed request with two or more tokens" if key == "tpot_s" else "no values",
                ha="center", va="center", transform=ax.transAxes, fontsize=9, color="#555")
        return
    for n, v in values.items():
        if len(v):
            ys = np.arange(1, len(v) + 1) / len(v)
            ax.step(np.concatenate([[0], v * scale]), np.concatenate([[0], ys]), where="post", color=colours[n],
                    label=n)
    for ms in shown:  # one line per distinct SLO, red as in the Gantt
        ax.axvline(ms / 1e3 * scale, color="#d62728", ls="--", lw=1.2)
        ax.annotate("SLO %g ms" % ms, (ms / 1e3 * scale, 0.04), textcoords="offset points", xytext=(3, 0),
                    fontsize=8, color="#d62728", rotation=90, va="bottom")
    if far:
        ax.text(0.97, 0.06, "SLO %s ms: far right of every request" % ", ".join("%g" % ms for ms in far),
                ha="right", va="bottom", transform=ax.transAxes, fontsize=8, color="#d62728",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    ax.set_xlim(left=0)


def latency_cdfs(serves, out_dir):
    if not any(completed(s.data) for s in serves):
        raise NoData("no request completed (every serve JSON's requests list is empty or unfinished)")
    names = labels(serves)
    colours = colour_map(names)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, (key, title, slo_key) in zip(axes.flat, CDF_PANELS):
        cdf_panel(ax, serves, names, colours, key, title, slo_key)
    if len(serves) > 1:  # below the panels: beside them it would squeeze all four
        handles, names_ = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, names_, loc="lower center", ncol=min(2, len(names_)), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.03 * ((len(names_) + 1) // 2) + 0.02, 1, 1))
    else:
        fig.tight_layout()
    unfinished = sum(len(s.data.get("requests") or []) - len(completed(s.data)) for s in serves)
    caption = ("Cumulative share of completed requests whose latency is at most x; dotted lines at 50, 90 and 99 %, "
               "dashed lines at the SLOs the run was measured against. TPOT is each request's mean gap between "
               "its later tokens (requests of one token have none); queueing is arrival to its first step.")
    if unfinished:
        caption += " %d request(s) did not complete (a truncated run) and are not counted." % unfinished
    return save(fig, out_dir, "serve_latency_cdf.png", "Latency CDFs", caption)


# ---- batch size and KV use over time ------------------------------------------------------------

def replica_name(rep):
    return "%s %s" % (rep.get("pool", "?"), rep.get("replica", "?"))


def series_of(rep):
    """(start, end, seqs, kv use in [0, 1], waiting) arrays of a replica's steps, or None."""
    s = rep.get("step_series")
    if not isinstance(s, dict) or not s.get("start_s"):
        return None
    start = np.asarray(s["start_s"], float)
    end = start + np.asarray(s["duration_s"], float)
    cap = rep.get("kv_capacity_blocks") or 0
    kv = np.asarray(s["kv_blocks_used"], float) / cap if cap > 0 else np.zeros(len(start))
    return start, end, np.asarray(s["seqs"], float), kv, np.asarray(s["waiting"], float)


def with_idle(start, end, values, idle_value):
    """Step-plot points; between a step's end and a later start the replica is idle."""
    xs, ys = [], []
    for i in range(len(start)):
        xs.append(start[i])
        ys.append(values[i])
        if i + 1 == len(start) or start[i + 1] > end[i] + 1e-12:
            xs.append(end[i])
            ys.append(values[i] if idle_value is None else idle_value)
    return np.asarray(xs), np.asarray(ys)


def binned(start, values, lo, hi, empty):
    """The largest value of the steps that start in each bin: peaks stay visible however short the
    steps (a mean over mostly idle time would flatten a lightly loaded replica to nothing); a bin
    without a step gets `empty` (0 sequences; no KV or queue reading)."""
    width = (hi - lo) / BINS
    idx = np.clip(((start - lo) / width).astype(int), 0, BINS - 1)
    ys = np.full(BINS, -np.inf)
    np.maximum.at(ys, idx, values)
    ys[np.isinf(ys)] = empty
    return lo + (np.arange(BINS) + 0.5) * width, ys


def batch_and_kv(serves, out_dir):
    shown = [(s, n) for s, n in zip(serves, labels(serves)) if any(series_of(r) for r in s.data.get("replicas") or [])]
    if not shown:
        raise NoData("no replica has a step series (step_series in the serve JSON: the run did not record steps)")
    rows = [("sequences in the batch", 2, 0), ("KV-cache use (% of capacity)", 3, None), ("requests waiting", 4, None)]
    fig, axes = plt.subplots(len(rows) * len(shown), 1, figsize=(11, 2.4 * len(rows) * len(shown)), sharex=False,
                             squeeze=False)
    any_binned = False
    for k, (s, name) in enumerate(shown):
        reps = [r for r in s.data.get("replicas") or [] if series_of(r)]
        colours = colour_map(replica_name(r) for r in reps)
        lo = min(series_of(r)[0][0] for r in reps)
        hi = max(series_of(r)[1][-1] for r in reps)
        for j, (ylabel, col, idle) in enumerate(rows):
            ax = axes[k * len(rows) + j][0]
            for r in reps:
                ser = series_of(r)
                vals = ser[col] * (100 if col == 3 else 1)
                if len(ser[0]) > BIN_ABOVE:
                    any_binned = True
                    xs, ys = binned(ser[0], vals, lo, hi, 0 if idle is not None else np.nan)
                    ax.plot(xs, ys, color=colours[replica_name(r)], lw=0.9, label=replica_name(r))
                else:
                    xs, ys = with_idle(ser[0], ser[1], vals, idle)
                    ax.step(xs, ys, where="post", color=colours[replica_name(r)], lw=0.9, label=replica_name(r))
            ax.set_ylabel(ylabel, fontsize=9)
            ax.set_ylim(0, 105 if col == 3 else None)
            if col != 3:  # counts: integer ticks, and an axis up to 1 at least when every value is 0
                ax.yaxis.set_major_locator(MaxNLocator(integer=True))
                ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))
            ax.set_xlim(lo, hi)
            ax.grid(alpha=0.3)
            if j == 0:
                ax.set_title(name if len(shown) > 1 else "per replica", fontsize=10)
                legend_outside(ax, title="replica")
            ax.set_xlabel("simulated time (s)" if j == len(rows) - 1 else "")
    fig.tight_layout()
    caption = ("Each replica's steps: sequences in the batch (0 while the replica is idle), KV-cache blocks in use "
               "after the step's allocation as a share of the replica's capacity, and requests waiting in its queue "
               "when the step started.")
    if any_binned:
        caption += (" Replicas with more than %d steps are drawn as %d time bins, each showing the largest value "
                    "among its steps (0 sequences where it has none)." % (BIN_ABOVE, BINS))
    return save(fig, out_dir, "serve_batch_kv.png", "Batch size and KV-cache use over time", caption)


# ---- Gantt of sampled requests -------------------------------------------------------------------

def sample_indices(n, cap):
    """Evenly spaced in arrival order, first and last included (as the Perfetto trace samples)."""
    if n <= cap:
        return list(range(n))
    return [i * (n - 1) // (cap - 1) for i in range(cap)]


def phases(r, end_s):
    """[(phase, from, to, finished)] of a request, back to back, from its record."""
    a, first, last = r.get("arrival_s"), r.get("ttft_s"), r.get("e2e_s")
    sched = a + r["queueing_s"] if number(r.get("queueing_s")) else None
    out = [("queueing", a, sched if sched is not None else end_s, sched is not None)]
    if sched is None:
        return out
    if not number(first):
        return out + [("prefill", sched, end_s, False)]
    first_s = a + first
    handed = number(r.get("decode_replica")) and r["decode_replica"] >= 0  # handed to the decode pool
    prefill_end = first_s - (r.get("kv_transfer_s") or 0) if handed else first_s
    out.append(("prefill", sched, prefill_end, True))
    if handed:
        out.append(("KV transfer", prefill_end, first_s, True))
    out.append(("decode", first_s, a + last if number(last) else end_s, bool(r.get("completed"))))
    return out


def sampled_requests(s):
    reqs = s.data.get("requests") or []
    return [reqs[i] for i in sample_indices(len(reqs), GANTT_REQUESTS)]


def run_end(s):
    reqs = s.data.get("requests") or []
    return min(r["arrival_s"] for r in reqs) + ((s.data.get("summary") or {}).get("duration_s") or 0)


def gantt_panel(ax, s, title, since_arrival=False):
    """Bars of the sampled requests: in simulated time, or (since_arrival) from each request's
    arrival, where queueing and prefill (short beside decode) can be read. Returns whether it drew
    the TTFT SLO (not when it lies far beyond every first token)."""
    shown, end_s = sampled_requests(s), run_end(s)
    firsts = [r["ttft_s"] for r in shown if number(r.get("ttft_s"))]
    slo = slo_ms(s.data, "ttft_ms")
    if slo and firsts and slo / 1e3 > 5 * max(firsts):
        slo = None
    scale, unit = seconds_unit(max(firsts + ([slo / 1e3] if slo else []), default=1e-3))
    span = max(end_s - min(r["arrival_s"] for r in shown), 1e-12)
    for y, r in enumerate(shown):
        parts = phases(r, end_s)
        for phase, lo, hi, done in parts:
            if since_arrival:
                lo, hi = (lo - r["arrival_s"]) * scale, (hi - r["arrival_s"]) * scale
            if hi > lo:  # hatches take the edge colour: white ones on an unfinished phase
                edge = "#d62728" if r.get("preemptions") else "none" if done else "white"
                ax.barh(y, hi - lo, left=lo, height=0.7, color=PHASE_COLOURS[phase], hatch=None if done else "//",
                        edgecolor=edge, lw=1.2 if r.get("preemptions") else 0)
        if not since_arrival and parts[-1][2] - r["arrival_s"] < 0.003 * span:  # too short for a visible bar
            ax.plot(r["arrival_s"], y, marker="|", ms=7, color=PHASE_COLOURS["decode"])
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([str(r.get("id")) for r in shown], fontsize=6 if len(shown) > 30 else 8)
    ax.set_ylim(len(shown) - 0.4, -0.6)  # the first arrival at the top
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    if not since_arrival:
        ax.set_ylabel("request id (arrival order)")
        ax.set_xlabel("simulated time (s)")
        return False
    # Up to the slowest first token shown (and the TTFT SLO), so the phases before decode fill the panel.
    if slo:  # named in the legend: a label on the line would sit on the bars
        ax.axvline(slo / 1e3 * scale, color="#d62728", ls="--", lw=1)
    ax.set_xlim(0, max(firsts + ([slo / 1e3] if slo else []), default=1e-3) * scale * 1.15)
    ax.set_xlabel("time since the request's arrival (%s)" % unit)
    ax.tick_params(axis="y", labelleft=False)
    return bool(slo)


def gantt(serves, out_dir):
    shown = [(s, n) for s, n in zip(serves, labels(serves)) if s.data.get("requests")][:4]
    if not shown:
        raise NoData("the serve JSON has no requests")
    heights = [min(len(s.data["requests"]), GANTT_REQUESTS) for s, _ in shown]
    fig, axes = plt.subplots(len(shown), 2, figsize=(12, sum(1.2 + 0.16 * h for h in heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights, "width_ratios": [2.4, 1]})
    slo_drawn = False
    for row, (s, name) in zip(axes, shown):
        n = len(s.data["requests"])
        sampled = "" if n <= GANTT_REQUESTS else ": %d of %d, evenly spaced in arrival order" % (GANTT_REQUESTS, n)
        gantt_panel(row[0], s, (name + "\nrequests" if len(shown) > 1 else "requests") + sampled)
        slo_drawn = gantt_panel(row[1], s, "the same, from each arrival", since_arrival=True) or slo_drawn
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PHASE_COLOURS.values()]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="#d62728", lw=1.2),
                plt.Rectangle((0, 0), 1, 1, facecolor="#777", edgecolor="white", hatch="//", lw=0)]
    names = list(PHASE_COLOURS) + ["preempted (outline)", "unfinished (hatched)"]
    slos = sorted({slo_ms(s.data, "ttft_ms") for s, _ in shown} - {None})
    if slos:
        handles.append(plt.Line2D([0], [0], color="#d62728", ls="--", lw=1))
        names.append("TTFT SLO (%s ms)%s" % (", ".join("%g" % v for v in slos),
                                              "" if slo_drawn else ": far right of the axis"))
    legend_outside(axes[0][1], handles=handles, labels=names)
    fig.tight_layout()
    return save(fig, out_dir, "serve_gantt.png", "Requests over time",
                "Each sampled request from its arrival: queueing until its first step, prefill until its first token "
                "(disaggregated: until the prefill ends, then the KV cache's transfer to the decode pool), decode "
                "until its last token. Left: simulated time (a request too short for a bar is a tick at its "
                "arrival); right: the same requests from their own arrival, up to the slowest first token, where "
                "queueing and prefill (short beside decode) can be read. "
                "A request preempted by recomputation (its KV cache freed under pressure) is outlined in red; "
                "its recomputation is inside the decode bar.")


# ---- capacity search -----------------------------------------------------------------------------

def capacity(serves, out_dir):
    """p99 TTFT and TPOT of each probe of `lpu serve --find-rate` against its rate, with the SLOs."""
    runs = [(s, n) for s, n in zip(serves, labels(serves))
            if isinstance(s.data.get("capacity"), dict) and s.data["capacity"].get("probes")]
    if not runs:
        raise NoData("no serve JSON has a capacity search (lpu serve --find-rate)")
    colours = colour_map(n for _, n in runs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, slo_key, title in ((axes[0], "ttft_p99_s", "ttft_ms", "p99 TTFT"),
                                    (axes[1], "tpot_p99_s", "tpot_ms", "p99 TPOT")):
        for s, n in runs:
            probes = sorted(s.data["capacity"]["probes"], key=lambda p: p.get("rate", 0))
            xs = [p.get("rate") for p in probes]
            ys = [p[key] * 1e3 if number(p.get(key)) else np.nan for p in probes]
            ax.plot(xs, ys, color=colours[n], lw=0.8, label=n)
            for x, y, p in zip(xs, ys, probes):
                ax.plot(x, y, "o" if p.get("meets") else "x", color=colours[n], ms=6)
            if s.data["capacity"].get("found"):
                rate = s.data["capacity"]["max_rate"]
                ax.axvline(rate, color=colours[n], ls=":", lw=1)
                ax.annotate("%.4g req/s" % rate, (rate, 1), xycoords=("data", "axes fraction"),
                            textcoords="offset points", xytext=(3, -12), fontsize=8, color=colours[n])
        for ms in sorted({slo_ms(s.data, slo_key) for s, _ in runs} - {None}):
            ax.axhline(ms, color="#d62728", ls="--", lw=1.2)
            ax.annotate("SLO %g ms" % ms, (0, ms), xycoords=("axes fraction", "data"), textcoords="offset points",
                        xytext=(4, 3), fontsize=8, color="#d62728")
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: "%g" % v)  # 30, not 3 x 10^1
        ax.yaxis.set_major_formatter(plain)
        lo, hi = ax.get_ylim()
        ax.yaxis.set_minor_formatter(plain if hi / lo < 20 else NullFormatter())  # labels between decades when few
        ax.set_xlabel("arrival rate (requests/s)")
        ax.set_ylabel("%s (ms)" % title)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, which="both")
    if len(runs) > 1:
        legend_outside(axes[1])
    fig.tight_layout()
    return save(fig, out_dir, "serve_capacity.png", "Capacity search",
                "Each probe of the search (o: met both SLOs at p99 with every request completed; x: missed); "
                "the dotted line is the highest rate found. Logarithmic latency axis: past capacity, queues grow "
                "without bound.")


# ---- tables ------------------------------------------------------------------------------------

def fmt(x, f="%.3g"):
    return f % x if number(x) else "—"


def dist(d, key, scale, f="%.3g"):
    return fmt(d.get(key) * scale, f) if isinstance(d, dict) and number(d.get(key)) else "—"


def summary_rows(j):
    """(metric, value) rows of one serve JSON's summary."""
    s = j.get("summary") or {}
    rows = [("requests completed", "%s of %s" % (s.get("completed", "?"), s.get("requests", "?"))),
            ("duration (s, first arrival to last token)", fmt(s.get("duration_s"))),
            ("throughput (requests/s)", fmt(s.get("requests_per_s"))),
            ("output tokens/s", fmt(s.get("output_tokens_per_s"), "%.4g"))]
    for key, name, scale, unit in (("ttft_s", "TTFT", 1e3, "ms"), ("tpot_s", "TPOT", 1e3, "ms"),
                                   ("e2e_s", "end-to-end", 1, "s"), ("queueing_s", "queueing", 1e3, "ms")):
        d = s.get(key) or {}
        rows.append(("%s p50 / p90 / p99 (%s)" % (name, unit),
                     " / ".join(dist(d, p, scale) for p in ("p50", "p90", "p99"))))
    slo = s.get("slo") or {}
    rows.append(("SLO: TTFT ≤ %s ms and TPOT ≤ %s ms: met"
                 % (fmt(slo.get("ttft_ms"), "%g"), fmt(slo.get("tpot_ms"), "%g")),
                 "%s (%s of all requests)" % (slo.get("met", "—"), fmt(100 * slo["attainment"], "%.1f %%")
                                              if number(slo.get("attainment")) else "—")))
    rows += [("goodput (requests/s meeting both SLOs)", fmt(slo.get("goodput_rps"))),
             ("preemptions (recomputations)", str(s.get("preemptions", "—"))),
             ("steps (all replicas)", str(s.get("steps", "—"))),
             ("energy (J) / per request (J) / per token (mJ)",
              "%s / %s / %s" % (fmt(s.get("energy_j"), "%.4g"), fmt(s.get("energy_per_request_j")),
                                fmt(s["energy_per_token_j"] * 1e3) if number(s.get("energy_per_token_j")) else "—")),
             ("mean requests in the system (Little's L)", fmt(s.get("mean_in_system")))]
    e = j.get("step_cost_error")
    pct = lambda x: "%.2f %%" % (100 * x) if number(x) else "—"  # noqa: E731
    rows.append(("step-cost model error vs exact simulation: p50 / max (samples)",
                 "%s / %s (%s)" % (pct(e.get("p50")), pct(e.get("max")), e.get("samples", "?"))
                 if isinstance(e, dict) else "not in the JSON"))
    cap = j.get("capacity")
    if isinstance(cap, dict):  # lpu serve --find-rate
        rows.append(("capacity: highest rate meeting both SLOs at p99 (requests/s)",
                     "%s (%d probes)" % (fmt(cap.get("max_rate"), "%.4g") if cap.get("found") else "none found",
                                         len(cap.get("probes") or []))))
    wall = j.get("wall")
    if isinstance(wall, dict) and number(wall.get("total_s")):
        rows.append(("wall time (s) / simulated seconds per wall second",
                     "%s / %s" % (fmt(wall["total_s"]), fmt(wall.get("simulated_s_per_wall_s")))))
    if j.get("truncated"):
        rows.append(("truncated", j.get("truncation_reason") or "yes"))
    return rows


def summary_table(serves):
    """(header, rows): a metric per row, a column per serve JSON."""
    names = labels(serves)
    per = [summary_rows(s.data) for s in serves]
    header = ["metric"] + names
    rows = [[per[0][i][0]] + [p[i][1] if i < len(p) and p[i][0] == per[0][i][0] else "—" for p in per]
            for i in range(len(per[0]))]
    return header, rows


def flat_config(j):
    """The cluster and cost-model keys, flattened (pool.replicas, link.bandwidth_gbps, ...)."""
    out = []

    def walk(node, prefix):
        for k, v in node.items():
            if isinstance(v, dict):
                walk(v, prefix + k + ".")
            elif not isinstance(v, list):
                out.append((prefix + k, str(v).lower() if isinstance(v, bool) else fmt_value(v)))
    for key in ("deployment", "cluster", "cost_model"):
        if isinstance(j.get(key), dict):
            walk(j[key], key + ".")
    return out


def unique_labels(serves):
    """The distinct "workload on arch" of the serve JSONs, for the page title."""
    out = []
    for s in serves:
        n = "%s on %s" % (name_of(s.data.get("workload")), name_of(s.data.get("arch")))
        if n not in out:
            out.append(n)
    return out
