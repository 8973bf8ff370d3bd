"""Acceptance test of `lpu sweep`: parallel run, SIGKILL half-way, --resume, failing points.

    pytest tests/sweep_test.py --lpu LPU --workdir OUT_DIR

Leaves OUT_DIR/full (the uninterrupted 24-point sweep) for the report, shard and Slurm tests.
"""
import csv
import json
import os
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "sweep")




def jsonl(check, path):
    with open(path) as f:
        text = f.read()
    check(text == "" or text.endswith("\n"), "%s ends with a complete line" % path)
    return [json.loads(line) for line in text.splitlines()]


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_wall(row):
    return {k: v for k, v in row.items() if k != "wall_s"}


def sweep(lpu, sweep_file, out, *extra):
    return subprocess.run([lpu, "sweep", sweep_file, "-j", "2", "-o", out] + list(extra),
                          capture_output=True, text=True)


def test_sweep_acceptance(lpu, workdir, check):
    work = workdir
    accept = os.path.join(DATA, "accept.yaml")

    # 1. The uninterrupted reference run.
    full = os.path.join(work, "full")
    t0 = time.time()
    r = sweep(lpu, accept, full)
    t_full = time.time() - t0
    check(r.returncode == 0, "uninterrupted sweep exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
    ref = {row["point_id"]: row for row in jsonl(check, os.path.join(full, "results.jsonl"))}
    check(len(ref) == 24, "uninterrupted sweep has 24 distinct points (%d)" % len(ref))
    check(all(row["status"] == "ok" for row in ref.values()), "every point succeeded")
    ref_csv = csv_rows(os.path.join(full, "results.csv"))
    check(len(ref_csv) == 24, "results.csv has 24 rows under one header")
    header = list(ref_csv[0].keys()) if ref_csv else []
    check(header[:9] == ["point_id", "status", "exit_code", "error", "workload", "fusion", "hbm.bandwidth_gbps",
                         "lmu.capacity_kib", "wall_s"], "CSV starts with the identity columns and the swept keys")
    check("engines.vxe.utilization" in header and "latency_us" in header, "CSV has flattened statistics")
    check(all(k in header for k in ("energy.total_j", "energy.dynamic_j", "energy.static_j",
                                     "energy.engines.hbm.total_j", "energy.events.sxe_macs")),
          "CSV has the energy columns")
    check(all(float(r["energy.total_j"]) > 0 for r in ref_csv), "every point has its energy")
    print("     uninterrupted: %.1f s" % t_full)

    # 2. Kill the sweep (SIGKILL, no chance to clean up) once at least 8 rows are in.
    killed = os.path.join(work, "killed")
    rows_file = os.path.join(killed, "results.jsonl")
    p = subprocess.Popen([lpu, "sweep", accept, "-j", "2", "-o", killed], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    n = 0
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        try:
            with open(rows_file, "rb") as f:
                n = f.read().count(b"\n")
        except OSError:
            n = 0
        if n >= 8:
            p.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    p.wait()
    check(p.returncode == -signal.SIGKILL, "the second sweep was killed by SIGKILL (not finished: %s)" % p.returncode)
    time.sleep(0.5)  # children die with the sweep; nothing may write rows any more
    with open(rows_file, "rb") as f:
        at_kill = f.read()
    rows_at_kill = at_kill.count(b"\n")
    check(8 <= rows_at_kill < 24, "killed half-way: %d rows (>= 8, < 24)" % rows_at_kill)
    time.sleep(0.3)
    with open(rows_file, "rb") as f:
        check(f.read() == at_kill, "no orphaned child keeps writing after the kill")
    before = {row["point_id"]: row for row in jsonl(check, rows_file)}

    # A kill inside a write would leave a torn last line; make one, resume must cut it off.
    with open(rows_file, "ab") as f:
        f.write(b'{"point_id": "torn')
    with open(os.path.join(killed, "results.csv"), "ab") as f:
        f.write(b"torn,o")

    # 3. Resume: only the missing points run; no row twice; values as in the reference run.
    r = sweep(lpu, accept, killed, "--resume")
    check(r.returncode == 0, "resumed sweep exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()))
    check("resuming: %d of 24 points" % rows_at_kill in r.stdout, "resume skips the %d finished points" % rows_at_kill)
    check("removed a torn last line" in r.stdout, "resume reports the torn line it removed")
    with open(rows_file, "rb") as f:
        check(f.read().startswith(at_kill), "rows written before the kill are kept byte for byte")
    rows = jsonl(check, rows_file)
    ids = [row["point_id"] for row in rows]
    check(len(rows) == 24 and len(set(ids)) == 24, "exactly 24 rows after resume, none twice (%d)" % len(rows))
    check(set(ids) == set(ref), "the same 24 points as the uninterrupted run")
    same_before = all(without_wall(before[i]) == without_wall(ref[i]) for i in before)
    check(same_before, "points finished before the kill have the uninterrupted run's values")
    same_all = all(without_wall(row) == without_wall(ref[row["point_id"]]) for row in rows)
    check(same_all, "every point has the uninterrupted run's values")
    csv_after = csv_rows(os.path.join(killed, "results.csv"))
    check(len(csv_after) == 24 and len({row["point_id"] for row in csv_after}) == 24,
          "results.csv: 24 rows after resume, torn row gone")
    ref_by_id = {row["point_id"]: without_wall(row) for row in ref_csv}
    check(all(without_wall(row) == ref_by_id.get(row["point_id"]) for row in csv_after),
          "results.csv rows equal the uninterrupted run's")

    # 4. A second --resume runs nothing; without --resume the directory is refused.
    r = sweep(lpu, accept, killed, "--resume")
    check(r.returncode == 0 and "(0 run now, 24 done before)" in r.stdout, "a finished sweep resumes to nothing")
    check(len(jsonl(check, rows_file)) == 24, "still 24 rows")
    r = sweep(lpu, accept, killed)
    check(r.returncode == 2 and "--resume" in r.stderr, "an existing results directory needs --resume (exit 2)")

    # 5. A failing point is recorded with its message; the sweep goes on and exits 1.
    fail_dir = os.path.join(work, "failing")
    r = sweep(lpu, os.path.join(DATA, "failing.yaml"), fail_dir, "--json", os.path.join(work, "failing.json"))
    check(r.returncode == 1, "a sweep with a failed point exits 1 (%d)" % r.returncode)
    rows = {row["point_id"]: row for row in jsonl(check, os.path.join(fail_dir, "results.jsonl"))}
    bad = rows.get("ln_gelu_add|none|lmu.capacity_kib=4", {})
    good = rows.get("ln_gelu_add|none|lmu.capacity_kib=256", {})
    check(bad.get("status") == "failed" and bad.get("exit_code") == 2 and "local memory" in bad.get("error", ""),
          "the failed point has status, exit code and the child's error message")
    check(good.get("status") == "ok" and good.get("latency_us", 0) > 0, "the other point ran")
    fcsv = csv_rows(os.path.join(fail_dir, "results.csv"))
    check(len(fcsv) == 2 and "latency_us" in fcsv[0], "CSV has both rows and the statistics columns")
    with open(os.path.join(work, "failing.json")) as f:
        summary = json.load(f)
    check(summary["failed"] == 1 and summary["ok"] == 1, "--json summary counts the failure")

    # 6. A point over --timeout is killed and recorded as failed.
    r = sweep(lpu, accept, os.path.join(work, "timeout"), "--timeout", "0.001")
    rows = jsonl(check, os.path.join(work, "timeout", "results.jsonl"))
    check(r.returncode == 1 and len(rows) == 24 and all("timed out" in row["error"] for row in rows),
          "--timeout fails every point that runs too long, and the sweep still finishes")
