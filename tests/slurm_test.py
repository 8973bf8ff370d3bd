"""`lpu sweep --backend slurm` against a real single-node Slurm (scripts/slurm-local.sh,
started by the ctest fixture; SLURM_CONF points at it).

    pytest tests/slurm_test.py --lpu LPU --reference REFERENCE_DIR [--workdir DIR]

REFERENCE_DIR: the local backend's 24-point sweep of tests/data/sweep/accept.yaml
(sweep_test.py's WORKDIR/full). Checks: an array sweep's results equal the local backend's;
a task cancelled with scancel, then --resume, completes the sweep with no point lost or
duplicated, resubmitting only that task's shard; --dry-run, a missing sbatch and a refused
job (bad partition) write nothing. Every wait is bounded. Python's standard library only.
"""
import json
import os
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ACCEPT = os.path.join(HERE, "data", "sweep", "accept.yaml")




def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def by_id(rows):
    return {r["point_id"]: {k: v for k, v in r.items() if k != "wall_s"} for r in rows}


def lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def run(cmd, env=None, timeout=240):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def test_slurm_backend(lpu, workdir, check, option):
    work, reference = workdir, option("--reference")
    assert reference, "--reference SWEEP_DIR/full (left by sweep_test.py) is required"
    if not os.environ.get("SLURM_CONF") or run(["sinfo", "-h", "-o", "%T"], timeout=30).stdout.strip() != "idle":
        pytest.fail("no idle Slurm node: start one with scripts/slurm-local.sh (the ctest fixture slurm_start does)")
    ref = by_id(jsonl(os.path.join(reference, "results.jsonl")))
    check(len(ref) == 24, "the local reference sweep has 24 points")

    # 1. --dry-run prints the script and writes nothing.
    dry = os.path.join(work, "dry")
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--array-size", "4", "--time", "10", "--dry-run", "-o", dry])
    check(r.returncode == 0 and "#SBATCH --array=0-3" in r.stdout and "--shard \"$SLURM_ARRAY_TASK_ID/4\"" in r.stdout
          and "#SBATCH --time=10" in r.stdout and not os.path.exists(dry),
          "--dry-run prints the sbatch script (array 0-3, --time) and writes nothing")

    # 2. The whole sweep as one job array: the local backend's results.
    full = os.path.join(work, "array")
    t0 = time.time()
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--array-size", "4", "-o", full])
    print("     array sweep: %.1f s" % (time.time() - t0))
    check(r.returncode == 0, "the array sweep exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()[-500:]))
    check("submitted job array" in r.stdout and os.path.exists(os.path.join(full, "slurm", "submit-1.sbatch")),
          "it says what it submitted and keeps the script in DIR/slurm")
    rows = jsonl(os.path.join(full, "results.jsonl")) if os.path.exists(os.path.join(full, "results.jsonl")) else []
    check(len(rows) == 24 and by_id(rows) == ref, "array results equal the local backend's (every statistic)")
    check(all(lines(os.path.join(full, "results-%d-of-4.jsonl" % i)) == 6 for i in range(4)),
          "each of the 4 tasks wrote its own shard file (6 points each)")
    check(all(os.path.exists(os.path.join(full, "slurm", "logs", f)) for f in os.listdir(os.path.join(full, "slurm", "logs")))
          and len(os.listdir(os.path.join(full, "slurm", "logs"))) == 4, "one log per task in DIR/slurm/logs")

    # 3. scancel one running task half-way, then --resume: no point lost or duplicated.
    cut = os.path.join(work, "cancelled")
    p = subprocess.Popen([lpu, "sweep", ACCEPT, "--backend", "slurm", "--array-size", "3", "-o", cut],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job, victim, deadline = None, None, time.time() + 120
    while time.time() < deadline and p.poll() is None and victim is None:
        try:
            with open(os.path.join(cut, "slurm", "jobs.json")) as f:
                job = json.load(f)["submissions"][0]["job_id"]
        except (OSError, ValueError, KeyError, IndexError):
            pass
        for i in range(3):
            if job and 1 <= lines(os.path.join(cut, "results-%d-of-3.jsonl" % i)) < 8:
                victim = i  # a task that has written some of its 8 points, not all
                run(["scancel", "%s_%d" % (job, i)], timeout=30)
                break
        time.sleep(0.01)
    try:
        out, _ = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    check(victim is not None, "cancelled task %s_%s while it was running" % (job, victim))
    kept = lines(os.path.join(cut, "results-%s-of-3.jsonl" % victim))
    check(p.returncode == 1 and kept < 8, "the sweep with a cancelled task exits 1 (%s), %d of 8 points of that shard done"
          % (p.returncode, kept))
    log = os.path.join(cut, "slurm", "logs", "task-%s_%s.log" % (job, victim))
    check("task %s_%s" % (job, victim) in out and "CANCELLED" in out and log in out,
          "the cancelled task is reported with its Slurm state and log path")
    check("run again with --resume" in out, "it says how to resubmit the missing points")
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--resume", "--dry-run", "-o", cut])
    check("#SBATCH --array=%s\n" % victim in r.stdout, "--resume --dry-run would resubmit only shard %s" % victim)
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--resume", "-o", cut])
    check(r.returncode == 0, "--resume completes the sweep (%d: %s)" % (r.returncode, r.stderr.strip()[-500:]))
    with open(os.path.join(cut, "slurm", "jobs.json")) as f:
        subs = json.load(f)["submissions"]
    check(len(subs) == 2 and subs[1]["array"] == str(victim) and subs[1]["points"] == 8 - kept,
          "the resubmission is one task running only the %d missing points" % (8 - kept))
    shard_ids = [row["point_id"] for i in range(3) for row in jsonl(os.path.join(cut, "results-%d-of-3.jsonl" % i))]
    check(len(shard_ids) == 24 and len(set(shard_ids)) == 24, "24 rows over the shard files, none twice")
    rows = jsonl(os.path.join(cut, "results.jsonl"))
    check(len(rows) == 24 and by_id(rows) == ref, "the resumed sweep's results equal the local backend's")

    # 4. A missing sbatch and a refused job: exit 2, the reason, nothing written.
    nosb = os.path.join(work, "no-sbatch")
    env = dict(os.environ, PATH="/nonexistent")
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "-o", nosb], env=env)
    check(r.returncode == 2 and "sbatch not found" in r.stderr and not os.path.exists(nosb),
          "no sbatch in PATH: exit 2, nothing written (%s)" % r.stderr.strip())
    bad = os.path.join(work, "bad-partition")
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--partition", "no_such_partition", "-o", bad])
    check(r.returncode == 2 and "refused" in r.stderr and "partition" in r.stderr and not os.path.exists(bad),
          "a bad partition: exit 2 with Slurm's reason, nothing written (%s)" % r.stderr.strip())
    os.makedirs(os.path.join(work, "existing"))
    r = run([lpu, "sweep", ACCEPT, "--backend", "slurm", "--partition", "no_such_partition", "-o",
             os.path.join(work, "existing")])
    check(r.returncode == 2 and os.listdir(os.path.join(work, "existing")) == [],
          "a refused job leaves an existing directory as it was")
