"""Reports at LLM scale, rendered by a real browser (issue 13).

    pytest tests/report_render_test.py --lpu LPU --workdir WORK_DIR [--reference SWEEP_DIR]

Writes a compare report of an LLM decode step (LLaMA-2-70B, 80 layers: the largest built-in, none vs greedy, with
traces) and, when SWEEP_DIR is given, a sweep report; renders each page in headless Chromium
(Debian's `chromium`) and fails on an image the browser cannot decode, an empty section or
a blank screenshot. Checks the Perfetto traces too: no two slices overlap on one track (the
trace-event format requires slices on a thread to nest), and the process is named. The
screenshots stay in WORK_DIR for a person to look at. The serving report (issue 27) is rendered
from the committed serve JSONs (tests/fixtures/serve/) into WORK_DIR/serve, with no binary:

    pytest tests/report_render_test.py::test_serve_report_renders_in_a_browser [--workdir DIR]
"""
import glob
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib





class Sections(html.parser.HTMLParser):
    """Each <h2> section and how many content elements (figure, table, p) follow it."""

    def __init__(self):
        super().__init__()
        self.sections = []

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self.sections.append([dict(attrs).get("id", "?"), 0])
        elif tag in ("figure", "table", "p", "img") and self.sections:
            self.sections[-1][1] += 1


# Runs in the page once it has loaded: lists the images the browser could not decode.
PROBE = """<script>
window.addEventListener("load", function () {
  var broken = [], imgs = document.images;
  for (var i = 0; i < imgs.length; i++)
    if (!imgs[i].complete || imgs[i].naturalWidth === 0) broken.push(imgs[i].getAttribute("src"));
  var d = document.createElement("div");
  d.id = "render-probe";
  d.textContent = "images=" + imgs.length + ";broken=" + broken.join(",");
  document.body.appendChild(d);
});
</script></body>"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(args):
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--allow-file-access-from-files", "--virtual-time-budget=15000"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=180)


def png_pixels_vary(path):
    """True when the PNG is not a single flat colour (a blank render). Reads the first IDAT
    rows; enough to tell a page from an empty one."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False
    pos, idat = 8, b""
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len(set(raw[:200000])) > 8


def render(check, report_dir, name, work):
    index = os.path.join(report_dir, "index.html")
    if not check(os.path.isfile(index), "%s: index.html exists" % name):
        return
    text = open(index, encoding="utf-8").read()
    parser = Sections()
    parser.feed(text)
    check(len(parser.sections) >= 3, "%s: the page has sections (%d)" % (name, len(parser.sections)))
    for anchor, content in parser.sections:
        check(content > 0, "%s: section '%s' is not empty" % (name, anchor))
    probe = os.path.join(report_dir, "render_probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", PROBE, 1))
    r = browser(["--dump-dom", "file://" + os.path.abspath(probe)])
    os.remove(probe)
    out = r.stdout
    start = out.find('id="render-probe">')
    if check(r.returncode == 0 and start >= 0, "%s: Chromium loads the page" % name):
        verdict = out[start + len('id="render-probe">'):out.find("</div>", start)]
        counts = dict(kv.split("=", 1) for kv in verdict.split(";"))
        check(int(counts["images"]) >= 3, "%s: the page shows images (%s)" % (name, counts["images"]))
        check(counts["broken"] == "", "%s: no broken image (%s)" % (name, counts["broken"] or "none"))
    shot = os.path.join(work, name + ".png")
    r = browser(["--screenshot=" + shot, "--window-size=1280,6000", "file://" + os.path.abspath(index)])
    check(r.returncode == 0 and os.path.isfile(shot) and png_pixels_vary(shot),
          "%s: screenshot %s is not blank" % (name, shot))


def check_traces(check, report_dir):
    traces = sorted(glob.glob(os.path.join(report_dir, "traces", "*.json")))
    check(len(traces) >= 2, "traces written (%d)" % len(traces))
    for path in traces:
        events = json.load(open(path))["traceEvents"]
        check(any(e.get("ph") == "M" and e.get("name") == "process_name" for e in events),
              "%s: the process is named" % os.path.basename(path))
        by_track = {}
        for e in events:
            if e.get("ph") == "X":
                by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"]))
        overlaps = 0
        for spans in by_track.values():
            spans.sort()
            overlaps += sum(1 for (a, da), (b, _) in zip(spans, spans[1:]) if a + da > b + 1e-6)
        check(overlaps == 0, "%s: no overlapping slices on one track (%d)" % (os.path.basename(path), overlaps))


def test_reports_render_in_a_browser(lpu, workdir, check, option):
    work = workdir
    sweep = option("--reference") or ""
    if not check(chromium() is not None, "Chromium is installed (scripts/install-deps.sh installs it)"):
        return
    llm = os.path.join(work, "llm")
    r = subprocess.run([lpu, "compare", "llama2-70b-decode", "--arch", "lpu-asic", "--fusion", "none,greedy",
                        "--report", llm], capture_output=True, text=True, timeout=900)
    if check(r.returncode == 0, "LLM compare report written (exit %d) %s" % (r.returncode, r.stderr[-300:])):
        render(check, llm, "llm_report", work)
        check_traces(check, llm)
    if sweep and os.path.isfile(os.path.join(sweep, "results.jsonl")):
        out = os.path.join(work, "sweep")
        r = subprocess.run([lpu, "report", sweep, "-o", out], capture_output=True, text=True, timeout=600)
        if check(r.returncode == 0, "sweep report written (exit %d)" % r.returncode):
            render(check, out, "sweep_report", work)


def test_serve_report_renders_in_a_browser(check, option, tmp_path):
    """The serving report of the fixtures (unified; disaggregated), and of a real `lpu serve` run when
    --lpu is given, as a person opens it. Writes into WORK_DIR/serve without emptying WORK_DIR, so
    the LLM report's screenshots stay."""
    if not check(chromium() is not None, "Chromium is installed (scripts/install-deps.sh installs it)"):
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = os.path.join(option("--workdir") or str(tmp_path), "serve")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    inputs = {name: os.path.join(root, "tests", "fixtures", "serve", name + ".json")
              for name in ("unified", "disaggregated")}
    lpu = option("--lpu")
    if lpu:  # a real run: a small model on the simulator, microseconds against LLM-sized SLOs
        inputs["lpu_serve"] = os.path.join(work, "lpu_serve.json")
        r = subprocess.run([lpu, "serve", "tiny-llama", "--rate", "20", "--requests", "100", "--prompt", "uniform:8:64",
                            "--output", "uniform:1:32", "--json", inputs["lpu_serve"]],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "lpu serve wrote its JSON (exit %d) %s" % (r.returncode, r.stderr[-300:]))
    for name, path in inputs.items():
        out = os.path.join(work, name)
        r = subprocess.run([sys.executable, os.path.join(root, "reports", "lpu_report.py"), path, "-o", out],
                           capture_output=True, text=True, timeout=300)
        if check(r.returncode == 0, "serve report of %s written (exit %d) %s" % (name, r.returncode, r.stderr[-300:])):
            render(check, out, "serve_%s_report" % name, work)
