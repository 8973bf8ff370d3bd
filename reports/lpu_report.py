#!/usr/bin/env python3
"""lpu report: an offline HTML page with PNG plots from sweep results, compare/run JSON and traces.

    lpu_report.py INPUT... -o DIR [--json FILE] [--cost COLUMN]

Usually run through `lpu report` (which finds an interpreter with matplotlib). Writes
DIR/index.html, the PNGs it shows, and DIR/report.json (the plots drawn and the ones that
could not be, with the reason). Exit codes: 0 ok, 2 bad input, 4 a bug in this script.
Formats and plots: docs/reports.md.
"""
import argparse
import json
import os
import sys
import traceback

# Run as a script (`lpu report` runs it so), Python puts this directory first on sys.path; the
# installed package (pyproject.toml) has these modules at top level too.
from html_page import Page
from plot_util import NoData, fmt_value, number
import plots_generate
import plots_runs
import plots_serve
import plots_sweep
import plots_trace
import roofline_table
from report_data import InputProblem, load_inputs


class Report:
    def __init__(self, out_dir, title):
        self.out_dir = out_dir
        self.page = Page(title)
        self.toc = []
        self.plots = []
        self.missing = []

    def section(self, title, anchor):
        self.page.h2(title, anchor)
        self.toc.append((anchor, title))

    def attempt(self, title, draw):
        """Draws one plot; when the inputs lack its data, the page says why instead."""
        try:
            plot = draw()
        except NoData as e:
            self.page.p("%s: not drawn: %s." % (title, e), "note")
            self.missing.append({"title": title, "reason": str(e)})
            return
        self.page.figure(plot)
        self.plots.append({"file": plot.file, "title": plot.title, "section": self.toc[-1][1]})


def no_data(reason):
    raise NoData(reason)


def pct(x):
    return "%.1f %%" % (100 * x) if number(x) else ""


def num(x, f="%.3f"):
    return f % x if number(x) else ""


def runs_table(rep, runs, extra_keys=()):
    engines = plots_runs.engine_names(runs)
    header = ["workload", "fusion"] + list(extra_keys) + ["latency (µs)", "cycles", "kernels", "HBM read (MB)",
                                                          "HBM write (MB)", "traffic / compulsory", "of HBM floor"]
    header += ["%s util" % e for e in engines]
    energy = any(number(r.get("energy.total_j")) for r in runs)  # configs with an energy section
    per_token = energy and any(number(r.get("llm.j_per_token")) for r in runs)
    header += (["energy (mJ)"] if energy else []) + (["mJ/token"] if per_token else [])
    rows = []
    for r in runs:
        rows.append([r.workload, r.fusion] + [fmt_value(r.point.get(k, "")) for k in extra_keys] + [
            num(r.get("latency_us")), r.get("cycles", ""), r.get("num_kernels", ""),
            num((r.get("hbm_read_bytes") or 0) / 1e6), num((r.get("hbm_write_bytes") or 0) / 1e6),
            # Not bytes moved over time (that falls when fusion removes bytes and reads like a
            # regression) but the floor (compulsory bytes at peak bandwidth) over the latency:
            # higher is better whatever fusion did, 100 % is the memory roofline.
            num(r.get("traffic_ratio"), "%.2f"), pct(r.get("hbm_floor.of_peak_floor"))]
            + [pct(r.get("engines.%s.utilization" % e)) for e in engines]
            + ([num(r.get("energy.total_j") * 1e3 if number(r.get("energy.total_j")) else None)] if energy else [])
            + ([num(r.get("llm.j_per_token") * 1e3 if number(r.get("llm.j_per_token")) else None)]
               if per_token else []))
    rep.page.table(header, rows)


def per_run_sections(rep, runs, subtitle=""):
    several = len({r.fusion for r in runs}) > 1
    rep.section("Fusion: latency and HBM traffic" if several else "Latency and HBM traffic", "fusion")
    rep.attempt("Fused vs unfused" if several else "Latency and HBM traffic", lambda: plots_runs.fusion_bars(runs, rep.out_dir, subtitle=subtitle))
    rep.section("Engine utilisation", "engines")
    rep.attempt("Per-engine utilisation", lambda: plots_runs.engine_utilisation(runs, rep.out_dir, subtitle=subtitle))
    rep.section("Time per op class", "kernels")
    rep.attempt("Time per op class", lambda: plots_runs.kernel_breakdown(runs, rep.out_dir, subtitle=subtitle))
    rep.section("Energy", "energy")
    rep.attempt("Energy by engine", lambda: plots_runs.energy_by_engine(runs, rep.out_dir, subtitle=subtitle))
    roofline_per_class(rep, runs)


def roofline_per_class(rep, runs):
    """Per run, each op class's kernel spans against their rooflines and the top blocker."""
    rep.section("Roofline per op class", "roofline-classes")
    shown = [r for r in runs if roofline_table.has_breakdown(r)]
    if not shown:
        rep.page.p("Roofline per op class: no run has per-kernel attribution (breakdown_cycles, written by "
                   "lpu run --json since the roofline tables landed).", "note")
        return
    rep.page.p("Achieved = the kernels' spans (first issue to last retirement, summed; spans of consecutive kernels "
               "can overlap); roofline = max(HBM bytes / (peak x hbm.efficiency), SXE FLOPs / SXE peak, VXE operations "
               "/ VXE peak) summed; top blocker = the category of the span (docs/sim-model.md) that lost the most "
               "cycles against the roofline.")
    for r in shown[:20]:
        rep.page.p(r.label)
        rep.page.table(roofline_table.HEADER, roofline_table.class_rows(r))


def sweep_report(rep, inputs, cost):
    sweep, runs = inputs.sweep, inputs.runs
    m = sweep.manifest
    rep.section("Sweep", "sweep")
    ok = sum(1 for r in sweep.rows if r.get("status") == "ok")
    failed = [r for r in sweep.rows if r.get("status") != "ok"]
    rep.page.p("%s%s" % (sweep.name, ": " + m["description"] if m.get("description") else ""))
    rep.page.table(["", ""], [
        ["directory", sweep.path], ["base config", m.get("base", "")],
        ["fixed overrides", ", ".join(m.get("set", [])) or "none"],
        ["workloads", ", ".join(w["name"] for w in m.get("workloads", []))],
        ["fusion policies", ", ".join(m.get("fusion", []))],
        ["combine", m.get("combine", "")],
    ] + [["axis " + a["key"], ", ".join(fmt_value(v) for v in a["values"])] for a in m.get("axes", [])] + [
        ["points", "%s in the sweep file, %d finished: %d ok, %d failed" % (m.get("points", "?"), len(sweep.rows), ok,
                                                                         len(failed))]])
    if len(sweep.rows) < (m.get("points") or 0):
        rep.page.p("The sweep is incomplete; continue it with `lpu sweep FILE -o DIR --resume`.", "note")
    if failed:
        rep.page.p("Failed points:")
        rep.page.table(["point", "exit", "error"], [[r["point_id"], r.get("exit_code"), r.get("error", "")]
                                                    for r in failed], ["failed"] * len(failed))
    ref = [r for r in runs if sweep.is_reference(r)]
    where = "at the reference point " + ", ".join("%s=%s" % (k, fmt_value(v)) for k, v in sweep.reference.items())
    if not ref and runs:
        # Every run of the reference point failed: show the first point that has results.
        point = runs[0].point
        ref = [r for r in runs if r.point == point]
        where = "at %s (no run of the reference point succeeded)" % ", ".join(
            "%s=%s" % (k, fmt_value(v)) for k, v in point.items())
    per_run_sections(rep, ref, where if sweep.axes else "")
    rep.section("Sweep plots", "sweep-plots")
    for title, draw in plots_sweep.sweep_plots(sweep, runs, rep.out_dir, cost):
        rep.attempt(title, draw)
    rep.section("Roofline", "roofline")
    rep.attempt("Roofline", lambda: plots_runs.roofline(runs, rep.out_dir))
    rep.section("Timeline", "timeline")
    rep.attempt("Timeline", lambda: plots_trace.timeline(inputs.traces, rep.out_dir, kernel_classes(runs)) if inputs.traces else no_data(
        "the sweep has no trace of a successful point (the sweep file says traces: %s; with 'reference' only "
        "the reference point's runs are traced)" % m.get("traces", "?")))
    rep.section("All points", "points")
    limit = 2000
    runs_table(rep, runs[:limit], sweep.axes)
    if len(runs) > limit:
        rep.page.p("First %d of %d successful points; all are in results.csv." % (limit, len(runs)), "note")


def kernel_classes(runs):
    """Kernel name -> op class from the runs' kernel lists (their graph nodes), so a timeline
    colours a fused kernel as the time-per-op-class plot counts it."""
    return {k["name"]: plots_runs.kernel_op_class(k) for r in runs for k in (r.kernels or []) if "name" in k}


def runs_report(rep, inputs):
    runs = inputs.runs
    rep.section("Runs", "runs")
    if runs:
        runs_table(rep, runs)
    else:
        rep.page.p("No run statistics were given (only traces).", "note")
    per_run_sections(rep, runs)
    rep.section("Roofline", "roofline")
    rep.attempt("Roofline", lambda: plots_runs.roofline(runs, rep.out_dir))
    rep.section("Timeline", "timeline")
    rep.attempt("Timeline", lambda: plots_trace.timeline(inputs.traces, rep.out_dir, kernel_classes(runs)))
    rep.page.p("Sweep plots (metric vs swept key, heatmap, Pareto front) need a sweep directory "
               "(`lpu sweep FILE -o DIR`, then `lpu report DIR -o ...`).", "note")


def generate_report(rep, gens):
    """`lpu generate` results: the metrics of each generation, latency and bytes vs position."""
    rep.section("Generation", "generation")
    us = lambda s: "%.3f" % (s * 1e6) if number(s) else ""  # noqa: E731
    rows = []
    for g in gens:
        pt = g.get("per_token_latency_s") or {}
        rows.append([plots_generate.label(g), us(g.get("ttft_s")), us(pt.get("mean")), us(pt.get("p50")),
                     us(pt.get("p99")), num(g.get("tokens_per_s"), "%.1f"), num((g.get("hbm_bytes") or 0) / 1e9),
                     "%s / %s" % (g.get("compile_cache", {}).get("compiles", "?"), g.get("compile_cache", {}).get("hits", "?")),
                     num(g["energy"]["total_j"], "%.4g") if g.get("energy") else "",
                     num(g["energy"]["decode_j_per_token"] * 1e3, "%.4g") if g.get("energy") else ""])
    rep.page.table(["generation", "TTFT (µs)", "per-token mean (µs)", "p50 (µs)", "p99 (µs)", "tokens/s", "HBM (GB)",
                    "compiles / hits", "energy (J)", "decode mJ/token"], rows)
    rep.page.p("Definitions: docs/generate.md (TTFT = the prefill including token 1; per-token latency over the "
               "decode steps; tokens/s = batch x gen_len / total latency, every sequence's tokens).")
    rep.attempt("Per-token latency vs position", lambda: plots_generate.latency_vs_position(gens, rep.out_dir))
    rep.attempt("HBM traffic per decode step vs position", lambda: plots_generate.bytes_vs_position(gens, rep.out_dir))
    rep.attempt("Energy per token vs position", lambda: plots_generate.energy_vs_position(gens, rep.out_dir))


def serve_report(rep, inputs):
    """`lpu serve` results: the summary, latency CDFs, batch and KV use over time, a request Gantt."""
    serves = inputs.serves
    rep.section("Serving", "serving")
    header, rows = plots_serve.summary_table(serves)
    rep.page.table(header, rows)
    rep.page.p("Definitions: docs/serving.md (percentiles over completed requests; TPOT = a request's mean gap "
               "between its later tokens; goodput = requests per second meeting both SLOs).")
    names = plots_serve.labels(serves)
    for s, name in zip(serves, names):
        if s.data.get("truncated"):
            rep.page.p("%s: the run was truncated (%s); unfinished requests fail the SLOs."
                       % (name, s.data.get("truncation_reason") or "watchdog"), "note")
    rep.section("Serving latency", "serve-latency")
    rep.attempt("Latency CDFs", lambda: plots_serve.latency_cdfs(serves, rep.out_dir))
    rep.section("Batch size and KV cache", "serve-batch-kv")
    rep.attempt("Batch size and KV-cache use over time", lambda: plots_serve.batch_and_kv(serves, rep.out_dir))
    rep.section("Requests over time", "serve-gantt")
    rep.attempt("Requests over time", lambda: plots_serve.gantt(serves, rep.out_dir))
    if any(isinstance(s.data.get("capacity"), dict) for s in serves):  # only runs with --find-rate search
        rep.section("Capacity search", "serve-capacity")
        rep.attempt("Capacity search", lambda: plots_serve.capacity(serves, rep.out_dir))
    # Last: a person reads the figures first, the keys that produced them when comparing runs.
    rep.section("Serving configuration", "serve-config")
    for s, name in zip(serves, names):
        config = plots_serve.flat_config(s.data)
        rep.page.p("%s (%s)%s" % (name, os.path.basename(s.path), ":" if config else
                                  ": the JSON has no deployment, cluster or cost_model keys."))
        if config:
            rep.page.table(["key", "value"], [list(kv) for kv in config])
    for path in inputs.serve_traces:
        rep.page.p("%s is a serving trace: open it in ui.perfetto.dev (a track per replica and per request); the "
                   "plots above are drawn from the serve JSON." % os.path.basename(path), "note")


def title_for(inputs):
    """Names every kind of input the page shows: a generation next to runs must not be titled
    after the runs alone (nor runs after the generation)."""
    parts = []
    if inputs.serves:
        parts.append("serving %s" % ", ".join(plots_serve.unique_labels(inputs.serves)))
    if inputs.generations:
        parts.append("generation of %s" % ", ".join(sorted({g["workload"].get("name", "?") for g in inputs.generations})))
    if inputs.sweep:
        parts.append("sweep %s" % inputs.sweep.name)
    else:
        workloads = sorted({r.workload for r in inputs.runs})
        archs = sorted({str(r.arch_value("name", "?")) for r in inputs.runs})
        if workloads:
            parts.append("%s on %s" % (", ".join(workloads), ", ".join(archs)))
    return "LPU report: " + "; ".join(parts) if parts else "LPU report"


def report_kind(inputs):
    if inputs.sweep:
        return "sweep"
    return "serve" if inputs.serves and not (inputs.runs or inputs.traces or inputs.generations) else "runs"


def remove_previous(out_dir):
    """Plots of an earlier report into the same directory would linger unreferenced."""
    old = os.path.join(out_dir, "report.json")
    try:
        with open(old) as f:
            for p in json.load(f).get("plots", []):
                path = os.path.join(out_dir, os.path.basename(p["file"]))
                if os.path.exists(path):
                    os.remove(path)
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass


def main(argv):
    ap = argparse.ArgumentParser(prog="lpu report", description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="sweep directory, compare/run JSON, trace JSON")
    ap.add_argument("-o", "--out", required=True, help="report directory")
    ap.add_argument("--json", help="also write the report summary (plots, missing plots) here")
    ap.add_argument("--cost", default="", help="Pareto cost column (default: relative hardware-cost proxy)")
    args = ap.parse_args(argv)
    try:
        inputs = load_inputs(args.inputs)
        if inputs.serve_traces and not inputs.serves:
            raise InputProblem("a serving trace has nothing to plot: give the serve JSON (`lpu serve --json FILE`) "
                               "too; open the trace in ui.perfetto.dev")
        if not (inputs.runs or inputs.traces or inputs.generations or inputs.serves
                or (inputs.sweep and inputs.sweep.rows)):
            raise InputProblem("the inputs hold no runs, sweep rows, generations, serving results or traces")
        os.makedirs(args.out, exist_ok=True)
        remove_previous(args.out)
        rep = Report(args.out, title_for(inputs))
        if inputs.serves:
            serve_report(rep, inputs)
        if inputs.generations:
            generate_report(rep, inputs.generations)
        if inputs.sweep:
            sweep_report(rep, inputs, args.cost)
        elif inputs.runs or inputs.traces or not (inputs.generations or inputs.serves):
            runs_report(rep, inputs)
    except InputProblem as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    rep.page.p("Inputs: " + ", ".join(os.path.abspath(p) for p in args.inputs))
    index = os.path.join(args.out, "index.html")
    with open(index, "w", encoding="utf-8") as f:
        f.write(rep.page.render(rep.toc))
    summary = {"title": rep.page.title, "index": os.path.abspath(index), "kind": report_kind(inputs),
               "inputs": [os.path.abspath(p) for p in args.inputs], "plots": rep.plots, "missing": rep.missing}
    for path in [os.path.join(args.out, "report.json")] + ([args.json] if args.json else []):
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(summary, f, indent=2)
    print("report: %s (%d plots%s)" % (index, len(rep.plots),
                                       ", %d not drawn for lack of data" % len(rep.missing) if rep.missing else ""))
    return 0


def console_main():
    """`lpu-report` (the installed package's command) and `python3 reports/lpu_report.py`."""
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit:
        raise
    except Exception:  # a bug here must not look like a failed check (exit 1)
        traceback.print_exc()
        print("internal error in the report script (a bug; please report it)", file=sys.stderr)
        sys.exit(4)


if __name__ == "__main__":
    console_main()
