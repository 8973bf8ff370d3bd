"""`lpu report` of serving results (`lpu serve --json`, docs/serving.md): the plots drawn from the
committed fixtures (tests/fixtures/serve/, written by test_serve_trace_events), what the page
says when data is missing, and bad input.

    PYTHONPATH=python:reports /usr/bin/python3 -m pytest tests/serve_report_test.py

Runs reports/lpu_report.py directly (the same script `lpu report` runs), so it needs no binary.
"""
import copy
import json
import os
import subprocess
import sys

from report_test import check_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "serve")
SCRIPT = os.path.join(ROOT, "reports", "lpu_report.py")
SERVE_PLOTS = {"serve_latency_cdf.png", "serve_batch_kv.png", "serve_gantt.png"}


def report(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def write(work, name, data):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def page_of(out):
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        return f.read()


def test_serve_report_draws_every_plot(workdir, check):
    for name in ("unified.json", "disaggregated.json"):
        out = os.path.join(workdir, name.split(".")[0])
        r = report(os.path.join(FIXTURES, name), "-o", out)
        if not check(r.returncode == 0, "%s: report exits 0 (%s)" % (name, r.stderr[-500:])):
            continue
        s = check_report(check, out, SERVE_PLOTS, set())
        check(s is not None and s["kind"] == "serve", "%s: the report knows it shows serving" % name)
        page = page_of(out)
        check("serving formula-7b on test" in page, "%s: the title names workload and arch" % name)
        for text in ("TTFT p50 / p90 / p99 (ms)", "goodput", "preemptions", "0.12 % / 0.71 % (64)",
                     "cluster.router", "cost_model.kind"):
            check(text in page.replace("&#x27;", "'"), "%s: the page shows %r" % (name, text))
    check("cluster.link.bandwidth_gbps" in page_of(os.path.join(workdir, "disaggregated")),
          "the disaggregated run's table shows its link")


def test_two_runs_on_one_page(workdir, check):
    out = os.path.join(workdir, "both")
    r = report(os.path.join(FIXTURES, "unified.json"), os.path.join(FIXTURES, "disaggregated.json"), "-o", out)
    if check(r.returncode == 0, "two serve JSONs: exit 0 (%s)" % r.stderr[-500:]):
        check_report(check, out, SERVE_PLOTS, set())
        page = page_of(out)
        check("(unified.json)" in page and "(disaggregated.json)" in page,
              "runs that read alike are told apart by their file names")


def test_missing_data_is_explained(workdir, check):
    j = fixture("unified.json")
    for rep in j["replicas"]:
        del rep["step_series"]  # result_json(r, with_steps = false)
    del j["step_cost_error"], j["cluster"], j["cost_model"]
    out = os.path.join(workdir, "no-steps")
    r = report(write(workdir, "no-steps.json", j), "-o", out)
    if check(r.returncode == 0, "no step series: exit 0 (%s)" % r.stderr[-500:]):
        s = check_report(check, out, {"serve_latency_cdf.png", "serve_gantt.png"},
                         {"Batch size and KV-cache use over time"})
        check(s is not None and "step series" in s["missing"][0]["reason"], "the reason names the step series")
        check("not in the JSON" in page_of(out), "the table says the step-cost error is not in the JSON")

    # A truncated run: nothing completed; the Gantt hatches what was left unfinished.
    t = copy.deepcopy(fixture("unified.json"))
    t["truncated"], t["truncation_reason"] = True, "stopped after max_steps = 10 steps"
    for q in t["requests"]:
        q.update(completed=False, tpot_s=None, e2e_s=None, tokens_generated=0)
    out = os.path.join(workdir, "truncated")
    r = report(write(workdir, "truncated.json", t), "-o", out)
    if check(r.returncode == 0, "truncated run: exit 0 (%s)" % r.stderr[-500:]):
        check_report(check, out, {"serve_batch_kv.png", "serve_gantt.png"}, {"Latency CDFs"})
        check("was truncated (stopped after max_steps" in page_of(out), "the page says the run was truncated")


def test_capacity_search_and_deployment(workdir, check):
    """The keys `lpu serve` adds: deployment, a --find-rate capacity search, wall time."""
    j = fixture("unified.json")
    j["deployment"] = {"model": "llama2-7b", "devices_per_replica": 1, "kv_capacity_tokens": 6400}
    probe = lambda rate, ttft, tpot, meets: {"rate": rate, "ttft_p99_s": ttft, "tpot_p99_s": tpot,  # noqa: E731
                                             "meets": meets, "truncated": False}
    j["capacity"] = {"found": True, "max_rate": 15.2, "probes": [
        probe(1, 0.03, 0.008, True), probe(32, 12.0, 0.03, False), probe(16, 0.2, 0.0105, False),
        probe(8, 0.05, 0.009, True), probe(15.2, 0.078, 0.0099, True)]}
    j["wall"] = {"total_s": 3.2, "simulated_s_per_wall_s": 4.26}
    out = os.path.join(workdir, "capacity")
    r = report(write(workdir, "capacity.json", j), "-o", out)
    if check(r.returncode == 0, "with a capacity search: exit 0 (%s)" % r.stderr[-500:]):
        check_report(check, out, SERVE_PLOTS | {"serve_capacity.png"}, set())
        page = page_of(out)
        for text in ("15.2 (5 probes)", "deployment.kv_capacity_tokens", "3.2 / 4.26"):
            check(text in page, "the page shows %r" % text)


def test_serving_traces_and_bad_input(workdir, check):
    trace = write(workdir, "trace.json", {"traceEvents": [], "otherData": {"kind": "serve"}})
    r = report(trace, "-o", os.path.join(workdir, "t"))
    check(r.returncode == 2 and "serve JSON" in r.stderr, "a serving trace alone: exit 2 naming the serve JSON")
    out = os.path.join(workdir, "with-trace")
    r = report(os.path.join(FIXTURES, "disaggregated.json"), trace, "-o", out)
    if check(r.returncode == 0, "serve JSON with its trace: exit 0 (%s)" % r.stderr[-300:]):
        check("trace.json is a serving trace: open it in ui.perfetto.dev" in page_of(out), "the trace is pointed to")
    bad = write(workdir, "bad.json", {"kind": "serve", "requests": []})
    r = report(bad, "-o", os.path.join(workdir, "bad"))
    check(r.returncode == 2 and "bad.json" in r.stderr and "summary" in r.stderr,
          "a serve JSON without a summary: exit 2 naming the file (%s)" % r.stderr.strip())
