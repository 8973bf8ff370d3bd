"""Shards and merging of `lpu sweep`, on one machine (no Slurm needed).

    pytest tests/sweep_shard_test.py --lpu LPU --reference REFERENCE_DIR [--workdir DIR]

REFERENCE_DIR is the uninterrupted 24-point sweep of tests/data/sweep/accept.yaml that
sweep_test.py leaves (its WORKDIR/full). Shards 0/3 and 1/3 run at once into one shared
directory, shard 2/3 into another; their merge must equal the reference.
"""
import csv
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "sweep")




def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def without_wall(row):
    return {k: v for k, v in row.items() if k != "wall_s"}


def by_id(rows):
    return {r["point_id"]: without_wall(r) for r in rows}


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_shards_and_merge(lpu, workdir, check, option):
    work, reference = workdir, option("--reference")
    assert reference, "--reference SWEEP_DIR/full (left by sweep_test.py) is required"
    accept = os.path.join(DATA, "accept.yaml")
    ref_rows = jsonl(os.path.join(reference, "results.jsonl"))
    ref = by_id(ref_rows)
    check(len(ref) == 24, "the reference sweep has 24 points")
    hashes = {r.get("sweep_hash") for r in ref_rows}
    check(len(hashes) == 1 and len(next(iter(hashes)) or "") == 16, "every reference row carries one sweep hash")

    # 1. Three shards, two of them at once into one directory.
    shared, alone = os.path.join(work, "shared"), os.path.join(work, "alone")
    procs = [subprocess.Popen([lpu, "sweep", accept, "--shard", "%d/3" % i, "-j", "1", "-o", shared],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    r = run([lpu, "sweep", accept, "--shard", "2/3", "-j", "1", "-o", alone])
    codes = [p.wait(timeout=120) for p in procs] + [r.returncode]
    check(codes == [0, 0, 0], "three shards exit 0 (%s)" % codes)
    check("shard 2/3: 8 points" in r.stdout, "a shard reports its own point count")
    shard_rows = {i: jsonl(os.path.join(shared if i < 2 else alone, "results-%d-of-3.jsonl" % i)) for i in range(3)}
    ids = [r["point_id"] for i in range(3) for r in shard_rows[i]]
    check(len(ids) == 24 and set(ids) == set(ref), "the shards are disjoint and together the sweep (%d rows)" % len(ids))
    check(not os.path.exists(os.path.join(shared, "results.jsonl")), "shards never write the whole sweep's files")
    manifest = json.load(open(os.path.join(shared, "manifest.json")))
    check(manifest.get("sweep_hash") in hashes, "manifest.json names the sweep hash of the rows")

    # 2. An unmerged shard directory is a report input (sharded results).
    rep = run([lpu, "report", shared, "-o", os.path.join(work, "report-shards"), "--json",
               os.path.join(work, "report-shards.json")])
    check(rep.returncode == 0, "lpu report reads a directory of shard files (%d: %s)" % (rep.returncode, rep.stderr[-300:]))

    # 3. Merge: every point once, the reference's values, the sweep's order, one CSV header.
    merged = os.path.join(work, "merged")
    r = run([lpu, "sweep", "merge", shared, alone, "-o", merged, "--json", os.path.join(work, "merge.json")])
    check(r.returncode == 0, "merge of all shards exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()))
    rows = jsonl(os.path.join(merged, "results.jsonl"))
    check(by_id(rows) == ref and len(rows) == 24, "merged rows equal the uninterrupted sweep's (wall_s aside)")
    with open(os.path.join(merged, "results.csv"), newline="") as f:
        mcsv = list(csv.DictReader(f))
    with open(os.path.join(reference, "results.csv"), newline="") as f:
        rcsv = {row["point_id"]: without_wall(row) for row in csv.DictReader(f)}
    check(len(mcsv) == 24 and all(without_wall(row) == rcsv.get(row["point_id"]) for row in mcsv),
          "merged results.csv rows equal the reference CSV rows")
    again = run([lpu, "sweep", "merge", shared, alone, "-o", os.path.join(work, "merged2")])
    with open(os.path.join(merged, "results.jsonl")) as a, open(os.path.join(work, "merged2", "results.jsonl")) as b:
        check(again.returncode == 0 and [without_wall(json.loads(x)) for x in a] == [without_wall(json.loads(x)) for x in b],
              "merging again gives the same rows in the same order")
    wl = [w["name"] for w in manifest["workloads"]]
    first = rows[:4]
    check([(r["workload"], r["fusion"]) for r in first] == [(w, f) for w in wl for f in manifest["fusion"]]
          and all(r["hbm.bandwidth_gbps"] == 128 and r["lmu.capacity_kib"] == 64 for r in first),
          "merged rows follow the sweep's expansion order (reference point first)")
    traces = [r["trace"] for r in rows if r["trace"]]
    check(len(traces) == 4 and all(os.path.exists(os.path.join(merged, t)) for t in traces),
          "the traces of shards in other directories are copied along")

    # 4. A partial merge says what is missing and exits 1.
    r = run([lpu, "sweep", "merge", shared])
    check(r.returncode == 1 and "16 of 24 points" in r.stdout and "2/3" in r.stdout,
          "a merge without shard 2/3 exits 1 and names it (%d: %s)" % (r.returncode, r.stdout.strip()))

    # 5. Shards of another sweep are refused, naming both hashes; nothing is written.
    other = os.path.join(work, "other")
    run([lpu, "sweep", os.path.join(DATA, "failing.yaml"), "--shard", "0/3", "-o", other])
    other_hash = json.load(open(os.path.join(other, "manifest.json")))["sweep_hash"]
    mixed = os.path.join(work, "mixed")
    r = run([lpu, "sweep", "merge", alone, other, "-o", mixed])
    check(r.returncode == 2 and manifest["sweep_hash"] in r.stderr and other_hash in r.stderr,
          "merging shards of two sweeps: exit 2 naming both hashes (%d: %s)" % (r.returncode, r.stderr.strip()))
    check(not os.path.exists(os.path.join(mixed, "results.jsonl")), "a refused merge writes no results")
    r = run([lpu, "sweep", os.path.join(DATA, "failing.yaml"), "--shard", "1/3", "-o", shared])
    check(r.returncode == 2 and "use another -o" in r.stderr and len(jsonl(os.path.join(shared, "results-1-of-3.jsonl"))) == 8,
          "a shard of another sweep into a shared directory is refused (exit 2), its results untouched")
    r = run([lpu, "sweep", "merge", os.path.join(reference)])
    check(r.returncode == 2 and "no shard results" in r.stderr, "merging a directory without shards: exit 2")
    r = run([lpu, "sweep", accept, "--shard", "0/2", "-o", alone, "--resume"])
    r2 = run([lpu, "sweep", "merge", alone])
    check(r.returncode == 0 and r2.returncode == 2 and "split the sweep differently" in r2.stderr,
          "shards of two splits (2 and 3) are not merged (exit 2)")

    # 6. Bad --shard values: exit 2 with the reason, nothing written.
    for bad, why in (("3/2", "below the count"), ("0/0", "at least 1"), ("1", "expected I/N")):
        d = os.path.join(work, "bad-" + bad.replace("/", "-"))
        r = run([lpu, "sweep", accept, "--shard", bad, "-o", d])
        check(r.returncode == 2 and why in r.stderr and not os.path.exists(d),
              "--shard %s: exit 2 (%s), no directory written" % (bad, r.stderr.strip()))
