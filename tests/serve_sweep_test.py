"""A serving sweep end to end (docs/sweeps.md "Serving sweeps"): configs/sweeps/serve_tiny.yaml
runs every point as `lpu serve`, each row carries the serving summary, a point's row equals
`lpu serve` run by hand with the point's flags, the summary names the highest-goodput point,
--resume has nothing left to run, `lpu report` plots goodput and p99 TTFT against each axis,
and both backends' dry runs show `lpu serve`.

    pytest tests/serve_sweep_test.py --lpu LPU [--workdir WORKDIR]
"""
import csv
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "configs", "sweeps", "serve_tiny.yaml")
# What every serving row carries (flattened as `lpu run` statistics are).
FIGURES = ["kind", "summary.ttft_s.p50", "summary.ttft_s.p99", "summary.tpot_s.p99", "summary.e2e_s.p90",
           "summary.queueing_s.p99", "summary.requests_per_s", "summary.output_tokens_per_s",
           "summary.slo.goodput_rps", "summary.slo.attainment", "summary.preemptions", "summary.energy_per_token_j",
           "step_cost_error.max", "deployment.kv_capacity_tokens", "cluster.pool.chunk_size"]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, **kw)


def rows_of(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_serving_sweep(lpu, workdir, check):
    out, summary = os.path.join(workdir, "out"), os.path.join(workdir, "summary.json")
    r = run([lpu, "sweep", EXAMPLE, "-j", "2", "-o", out, "--json", summary])
    check(r.returncode == 0, "the sweep exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
    rows = rows_of(os.path.join(out, "results.jsonl"))
    check(len(rows) == 6 and all(row["status"] == "ok" for row in rows),
          "6 points, all ok (%s)" % [(row["point_id"], row["error"]) for row in rows if row["status"] != "ok"])
    if check.failures:
        return
    for row in rows:
        missing = [k for k in FIGURES if k not in row]
        check(not missing, "%s carries the serving figures (missing %s)" % (row["point_id"], missing))
        check(row.get("kind") == "serve" and row.get("summary.requests") == 24, "%s is a 24-request serving run" % row["point_id"])
        check(row.get("cluster.pool.chunk_size") == row["serve.chunk_size"], "the point's chunk size reached lpu serve")
        check("requests" not in row and "replicas" not in row, "no per-request or step series in the row")
    with open(os.path.join(out, "results.csv"), newline="") as f:
        header = next(csv.reader(f))
    check(all(k in header for k in FIGURES if k != "kind"), "results.csv has the serving columns")

    # A point equals `lpu serve` run by hand with its flags (a run is deterministic for a seed).
    row = next(r for r in rows if r["serve.rate"] == 100 and r["serve.chunk_size"] == 32)
    by_hand = os.path.join(workdir, "by_hand.json")
    r = run([lpu, "serve", "tiny-llama", "--arch", "lpu-small", "--requests", "24", "--seed", "1", "--error-samples",
             "2", "--slo-ttft-ms", "0.3", "--slo-tpot-ms", "0.012", "--rate", "100", "--chunk-size", "32",
             "--json", by_hand])
    check(r.returncode == 0, "lpu serve by hand exits 0 (%s)" % r.stderr.strip())
    if r.returncode == 0:
        with open(by_hand) as f:
            s = json.load(f)["summary"]
        for k in ("ttft_s", "tpot_s", "e2e_s"):
            check(row["summary.%s.p99" % k] == s[k]["p99"], "%s p99 equals lpu serve's" % k)
        check(row["summary.slo.goodput_rps"] == s["slo"]["goodput_rps"], "goodput equals lpu serve's")

    with open(summary) as f:
        best = json.load(f).get("highest_goodput", [])
    top = max(rows, key=lambda r: r["summary.slo.goodput_rps"])
    check(len(best) == 1 and best[0]["summary.slo.goodput_rps"] == top["summary.slo.goodput_rps"]
          and best[0]["serve.rate"] == top["serve.rate"], "the summary names the highest-goodput point (%s)" % best)

    r = run([lpu, "sweep", EXAMPLE, "-o", out, "--resume"])
    check(r.returncode == 0 and "6 done before" in r.stdout, "--resume finds every point done (%s)" % r.stdout.strip())

    rep = os.path.join(workdir, "report")
    r = run([lpu, "report", out, "-o", rep])
    check(r.returncode == 0 and os.path.exists(os.path.join(rep, "index.html")),
          "lpu report reads the serving sweep (%d: %s)" % (r.returncode, r.stderr.strip()))
    if r.returncode == 0:
        with open(os.path.join(rep, "report.json")) as f:
            titles = [p["title"] for p in json.load(f)["plots"]]
        check("Metrics vs serve.rate" in titles and "Metrics vs serve.chunk_size" in titles,
              "the report plots goodput and p99 TTFT against each serving axis (%s)" % titles)


def test_dry_runs_show_lpu_serve(lpu, workdir, check):
    out = os.path.join(workdir, "dry")
    r = run([lpu, "sweep", EXAMPLE, "-o", out, "--dry-run"])
    check(r.returncode == 0 and "6 points" in r.stdout, "local dry run: 6 points (%s)" % r.stdout.strip())
    check("lpu serve tiny-llama --arch" in r.stdout and "--rate 50 --chunk-size 32" in r.stdout,
          "local dry run shows the first point's lpu serve command")
    r = run([lpu, "sweep", EXAMPLE, "-o", out, "--dry-run", "--backend", "slurm"])
    check(r.returncode == 0 and "every point runs `lpu serve" in r.stdout and "#SBATCH --array=0-5" in r.stdout,
          "the Slurm script runs the serving points (%d: %s%s)" % (r.returncode, r.stdout, r.stderr))
    check(not os.path.exists(os.path.join(out, "results.jsonl")), "dry runs write no results")
