#!/usr/bin/env python3
"""The bad-input catalogue (docs/robustness.md): every case runs `lpu` on one hostile input and
asserts the exit code and that the message names the file and the key, line or node.

  run_catalogue.py LPU --list            case names, one a line (CMake registers one test each)
  run_catalogue.py LPU --case NAME       run one case
  run_catalogue.py LPU                   run every case, print a summary

Cases live in cases.py (data: name, expected exit, regex, arguments, input files). Standard
library only. Beyond each case's own regex, every exit-2 case must print one "error: " line
that is not an internal error, and no case may print more than 64 KiB (a 50 MB name must not
be echoed back)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import cases as catalogue  # next to this script, which Python puts first on sys.path

MAX_OUTPUT = 64 * 1024
# A sanitizer build runs 10-30x slower than Release: scripts/asan.sh sets the scale so that a
# slow answer there is not taken for a hang (Release keeps the plain limits).
TIMEOUT_SCALE = float(os.environ.get("LPU_TEST_TIMEOUT_SCALE", "1"))


def fill(s, values):
    """{NAME} -> values[NAME] for the names given; other braces (YAML, regex) stay."""
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), s)


def run_case(lpu, case, repo):
    tmp = tempfile.mkdtemp(prefix="lpu-bad-")
    try:
        paths = {"tmp": tmp, "repo": repo}
        for key, make in case.files.items():
            paths[key] = make(tmp, key, repo)
        args = [fill(a, paths) for a in case.args]
        pattern = fill(case.pattern, {k: re.escape(v) for k, v in paths.items()})
        t0 = time.monotonic()
        try:
            p = subprocess.run([lpu] + args, cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=case.timeout * TIMEOUT_SCALE)
        except subprocess.TimeoutExpired:
            return "no answer within %d s (a hang)" % (case.timeout * TIMEOUT_SCALE)
        wall = time.monotonic() - t0
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != case.exit:
            return "exit %d, expected %d; output:\n%s" % (p.returncode, case.exit, out[-2000:])
        if len(p.stdout) > MAX_OUTPUT:
            return "printed %d bytes (more than %d)" % (len(p.stdout), MAX_OUTPUT)
        if case.exit == 2 and ("error: " not in out or "internal error" in out):
            return "exit 2 without an 'error: ' line, or with an internal error:\n" + out[-2000:]
        if not re.search(pattern, out):
            return "output lacks /%s/; output:\n%s" % (pattern, out[-2000:])
        if case.check:
            problem = case.check(paths)
            if problem:
                return problem
        return "ok %.1fs" % wall
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    lpu = os.path.abspath(argv[1])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cases = catalogue.CASES
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print("duplicate case names: %s" % ", ".join(sorted(dup)))
        return 1
    if "--list" in argv:  # NAME, or NAME:open for a case known still to fail
        print("\n".join(c.name + (":open" if c.open_issue else "") for c in cases))
        return 0
    if "--case" in argv:
        wanted = argv[argv.index("--case") + 1]
        cases = [c for c in cases if c.name == wanted]
        if not cases:
            print("no case %s" % wanted)
            return 1
    single = "--case" in argv
    failed = still_open = 0
    kinds = {}
    for c in cases:
        result = run_case(lpu, c, repo)
        ok = result.startswith("ok")
        kind = c.name.split("_")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        if c.open_issue and not single:  # the whole catalogue: an open case is expected to fail
            still_open += not ok
            failed += ok
            print("%s %s: %s" % ("OPEN" if not ok else "FAIL", c.name,
                                 "(known: %s) %s" % (c.open_issue, result.splitlines()[0]) if not ok
                                 else "passes now: remove its open_issue mark"))
            continue
        failed += not ok
        print("%s %s: %s" % ("ok  " if ok else "FAIL", c.name, result))
    print("%d cases (%s), %d failed, %d known open" % (len(cases), ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
                                                       failed, still_open))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
