"""Test of `lpu report` and `lpu compare --report`.

    pytest tests/report_test.py --lpu LPU --reference SWEEP_DIR/full [--workdir DIR]

Needs SWEEP_DIR/full, the 24-point sweep left by sweep_test.py (a ctest fixture), and
SWEEP_DIR/failing, its sweep with a failed point. Checks that
every plot a sweep report lists exists as a valid PNG and is referenced by an offline
index.html, that reports of runs without traces say what is missing, and the exit codes.
"""
import json
import os
import re
import shutil
import struct
import subprocess

SWEEP_PLOTS = {"fusion.png", "engines.png", "kernels.png", "roofline.png", "timeline.png", "heatmap.png",
               "pareto.png", "sweep_hbm_bandwidth_gbps.png", "sweep_lmu_capacity_kib.png", "energy.png",
               "pareto_energy.png"}




def png_size(path):
    """(width, height) of a PNG, or None when the file is not one."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check_report(check, out, expect_plots=None, expect_missing=None):
    index = os.path.join(out, "index.html")
    if not check(os.path.exists(index), "%s exists" % index):
        return None
    with open(index, encoding="utf-8") as f:
        page = f.read()
    with open(os.path.join(out, "report.json")) as f:
        summary = json.load(f)
    files = {p["file"] for p in summary["plots"]}
    if expect_plots is not None:
        check(expect_plots <= files, "report lists every expected plot (missing: %s)" % sorted(expect_plots - files))
    for name in sorted(files):
        size = png_size(os.path.join(out, name))
        check(size is not None and size[0] >= 200 and size[1] >= 150, "%s is a PNG of a sensible size %s" % (name, size))
        check('src="%s"' % name in page, "index.html shows %s" % name)
    srcs = re.findall(r'(?:src|href)="([^"#]+)"', page)
    check(all(not s.startswith(("http:", "https:", "//")) for s in srcs) and "<script" not in page,
          "the page works offline (no external references, no scripts)")
    if expect_missing is not None:
        got = {m["title"] for m in summary["missing"]}
        check(got == expect_missing, "plots not drawn: %s (expected %s)" % (sorted(got), sorted(expect_missing)))
        for m in summary["missing"]:
            check("not drawn" in page and m["reason"].split("(")[0][:30] in page.replace("&quot;", '"'),
                  "the page says why %s is missing" % m["title"])
    return summary


def lpu_run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def test_report(lpu, workdir, check, option):
    work = workdir
    sweep_dir = option("--reference")
    check(bool(sweep_dir) and os.path.exists(os.path.join(sweep_dir, "results.jsonl")),
          "the sweep fixture exists (--reference DIR/full, left by sweep_test.py)")
    out = os.path.join(work, "report")
    shutil.rmtree(out, ignore_errors=True)

    # A sweep: every listed plot is drawn.
    r = lpu_run(lpu, "report", sweep_dir, "-o", out, "--json", os.path.join(work, "report-summary.json"))
    check(r.returncode == 0, "lpu report on the sweep exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()[-500:]))
    s = check_report(check, out, SWEEP_PLOTS, set())
    check(s is not None and s["kind"] == "sweep", "the report knows it shows a sweep")
    check(os.path.exists(os.path.join(work, "report-summary.json")), "--json writes the summary")
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        page = f.read()
    check(page.count("<tr>") >= 24, "the page tabulates the points")

    # The small sweep with a failed point (also from sweep_test.py): one axis, --cost COLUMN.
    fail_out = os.path.join(work, "report-failing")
    failing_sweep = os.path.join(os.path.dirname(sweep_dir), "failing")  # sweep_test.py's, next to full/
    r = lpu_run(lpu, "report", failing_sweep, "-o", fail_out, "--cost", "arch.lmu.capacity_kib")
    check(r.returncode == 0, "a report of a sweep with a failed point exits 0 (%s)" % r.stderr.strip()[-300:])
    check_report(check, fail_out, {"pareto.png", "heatmap.png", "sweep_lmu_capacity_kib.png", "roofline.png"})
    with open(os.path.join(fail_out, "index.html"), encoding="utf-8") as f:
        page = f.read()
    check("Failed points" in page and "local memory" in page, "the page lists the failed point and its error")
    check("arch.lmu.capacity_kib" in page, "--cost names the Pareto cost column")
    r = lpu_run(lpu, "report", failing_sweep, "-o", fail_out, "--cost", "no.such.column")
    check(r.returncode == 2 and "numeric columns" in r.stderr, "--cost with an unknown column is exit 2")

    # compare --report: a trace per policy, so the timeline is drawn too.
    cmp_dir = os.path.join(work, "compare")
    shutil.rmtree(cmp_dir, ignore_errors=True)
    r = lpu_run(lpu, "compare", "rms_norm", "--fusion", "none,greedy", "--report", cmp_dir)
    check(r.returncode == 0 and "index.html" in r.stdout, "compare --report exits 0 and says where the report is")
    check_report(check, cmp_dir, {"fusion.png", "engines.png", "kernels.png", "roofline.png", "timeline.png", "energy.png"},
                 set())
    check(os.path.exists(os.path.join(cmp_dir, "traces", "greedy.json")), "compare --report keeps the traces")
    with open(os.path.join(cmp_dir, "index.html"), encoding="utf-8") as f:
        page = f.read()
    check('id="roofline-classes"' in page and page.count("top blocker") >= 2,
          "the page has a roofline-per-op-class table for each policy")

    # A run without a trace: the page says what is missing instead of failing.
    run_json = os.path.join(work, "run.json")
    lpu_run(lpu, "run", "softmax", "--json", run_json)
    r = lpu_run(lpu, "report", run_json, "-o", os.path.join(work, "run-report"))
    check(r.returncode == 0, "a report of one run without a trace exits 0")
    check_report(check, os.path.join(work, "run-report"), {"fusion.png", "roofline.png"}, {"Timeline"})

    # A sweep over the batch (a workload key as an axis): the batch roofline is drawn.
    batch_dir = os.path.join(work, "batch")
    shutil.rmtree(batch_dir, ignore_errors=True)
    batch_yaml = os.path.join(work, "batch.yaml")
    with open(batch_yaml, "w") as f:
        f.write("base: lpu-small\nworkloads: [tiny-opt]\nfusion: [greedy]\ntraces: none\n"
                "axes:\n  workload.batch: [1, 2, 4]\n")
    r = lpu_run(lpu, "sweep", batch_yaml, "-j", "2", "-o", batch_dir)
    check(r.returncode == 0, "a sweep over workload.batch exits 0 (%s)" % r.stderr.strip()[-300:])
    r = lpu_run(lpu, "report", batch_dir, "-o", os.path.join(batch_dir, "report"))
    check(r.returncode == 0, "its report exits 0 (%s)" % r.stderr.strip()[-300:])
    check_report(check, os.path.join(batch_dir, "report"), {"batch_roofline.png", "sweep_workload_batch.png"})
    with open(os.path.join(batch_dir, "results.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    check(sorted(r["workload.batch"] for r in rows) == [1, 2, 4] and all(r["workload_spec"]["batch"] == r["workload.batch"] for r in rows),
          "each point ran its batch")
    check(all(r["llm.tokens_per_step"] == r["workload.batch"] and r["llm.compute_roof_tokens_per_s"] > 0
              and r["llm.memory_roof_tokens_per_s"] > 0 for r in rows), "each row has the step's two roofs")
    check(all(r["workload_spec"]["decoder"]["d_model"] == 64 and r["workload_spec"]["decoder"]["norm"] == "layernorm"
              for r in rows), "each row records the decoder's shape as its keys")

    # Bad input: exit 2 with a message.
    r = lpu_run(lpu, "report", os.path.join(work, "nope.json"), "-o", os.path.join(work, "bad"))
    check(r.returncode == 2 and "no such file" in r.stderr, "a missing input is exit 2")
    r = lpu_run(lpu, "report", sweep_dir, run_json, "-o", os.path.join(work, "bad"))
    check(r.returncode == 2 and "cannot be mixed" in r.stderr, "a sweep mixed with run files is exit 2")
    junk = os.path.join(work, "junk.json")
    with open(junk, "w") as f:
        f.write('{"hello": 1}')
    r = lpu_run(lpu, "report", junk, "-o", os.path.join(work, "bad"))
    check(r.returncode == 2 and "neither a run" in r.stderr, "an unrecognised JSON is exit 2")
