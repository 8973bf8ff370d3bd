"""Bad input by class (docs/robustness.md, "Classes of bad input"): every path and number
argument of every `lpu` subcommand, crossed with every class of bad input its kind admits.

The arguments are not listed here: `lpu cli-spec` lists every subcommand's options with their
kind (apps/lpu/cli_spec.cpp), so a new subcommand or flag is tried as soon as it exists, and one
of a kind nobody classified fails `test_every_option_is_classified`. What is listed here is
per kind and per format: the classes, and one valid sample of each input format (the other
arguments of a case get these, so only the argument under test is bad).

Every case must end in the documented exit (2, or 0 where the class is a valid input, such as
`--json /dev/null`), within its time limit, without a signal or an internal error, print one
`error: ` line naming the path (or the flag, for numbers) and print at most 64 KiB.

    /usr/bin/python3 -m pytest tests/badinput/cli_classes_test.py --lpu build/lpu
    LPU_CLASSES=fifo,dev_zero ... (only these classes)    LPU_CLASSES_COMMAND=sim ... (one command)
"""
import concurrent.futures
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_SCALE = float(os.environ.get("LPU_TEST_TIMEOUT_SCALE", "1"))
RUN_TIMEOUT_S = 30
MAX_OUTPUT = 64 * 1024
IS_ROOT = os.geteuid() == 0

# ---- contents that are not what the argument promises -------------------------------------------

BINARY = bytes(range(256)) * 8  # NULs, invalid UTF-8, every control character
YAML_LIST = b"- hbm\n- lmu\n"
JSON_LIST = b"[1, 2, 3]\n"
TEXT_GRAPH = b"graph g {\n  %x: f32[4, 8] = placeholder\n  %y: f32[4, 8] = relu(%x)\n  output(%y)\n}\n"
JSON_GRAPH = (b'{"format": "lpu-graph", "version": 1, "name": "g", "nodes": [\n'
              b'  {"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4, 8]},\n'
              b'  {"name": "y", "kind": "call", "op": "relu", "inputs": ["x"], "dtype": "f32", "shape": [4, 8]}\n'
              b'], "outputs": ["y"]}\n')
ASM_TEXT = b".program p\n.kernel 0 k\n  halt\n"

YAML_CONTENTS = [("empty", "empty.yaml", b""), ("yaml_list", "list.yaml", YAML_LIST),
                 ("json_list", "list-json.yaml", JSON_LIST), ("binary", "binary.yaml", BINARY)]
JSON_CONTENTS = [("empty_json", "empty.json", b""), ("json_list", "list.json", JSON_LIST),
                 ("json_scalar", "scalar.json", b"42\n"), ("binary_json", "binary.json", BINARY)]
WORKLOAD_CONTENTS = YAML_CONTENTS + JSON_CONTENTS + [
    ("text_graph_as_json", "text-graph.json", TEXT_GRAPH), ("json_graph_as_txt", "json-graph.txt", JSON_GRAPH),
    ("empty_txt", "empty.txt", b""), ("binary_txt", "binary.txt", BINARY)]

# Per input format: its extension (paths of the path classes carry it, so that dispatch by
# extension is tried too), and its contents classes.
FORMATS = {
    "arch-config": (".yaml", YAML_CONTENTS),
    "workload": (".yaml", WORKLOAD_CONTENTS),
    "llm": (".yaml", WORKLOAD_CONTENTS),
    "graph-json": (".json", JSON_CONTENTS + [("text_graph_as_json", "text-graph.json", TEXT_GRAPH),
                                            ("yaml_as_json", "yaml.json", b"name: g\n")]),
    "program": (".s", [("empty_asm", "empty.s", b""), ("binary_asm", "binary.s", BINARY),
                       ("empty_lpubin", "empty.lpubin", b""), ("text_lpubin", "text.lpubin", ASM_TEXT)]),
    "sweep-file": (".yaml", YAML_CONTENTS),
    "report-input": (".json", JSON_CONTENTS + [("graph_as_report", "graph.json", JSON_GRAPH)]),
    "results-dir": ("", []),
    "serve-trace": (".csv", [("empty_csv", "empty.csv", b""), ("binary_csv", "binary.csv", BINARY),
                             ("json_list_jsonl", "list.jsonl", JSON_LIST), ("yaml_as_csv", "yaml.csv", YAML_LIST)]),
    "gpu-config": (".yaml", YAML_CONTENTS),
    "cost-cache": (".json", [("json_list", "list.json", JSON_LIST), ("binary_json", "binary.json", BINARY)]),
}
# A cache that does not exist yet is made; a file there that does not hold a memo is the user's:
# refused, never rewritten (docs/serving.md).
INPUT_EXITS = {("cost-cache", "missing"): {0}}
# Directories are what these formats may hold: their directory class is an empty one.
DIRECTORY_FORMATS = {"report-input", "results-dir"}

# Numbers: the values each numeric kind must refuse (exit 2 naming the flag).
NUMBERS = {
    "count": ["0", "-1", "nan", "inf", "99999999999999999999"],
    "count0": ["-1", "nan", "inf", "99999999999999999999"],
    "time": ["-1", "nan", "inf", "1e400"],  # 0 is valid (--timeout: no limit)
    "rate": ["0", "-1", "nan", "inf"],
    "integer": ["nan", "inf", "99999999999999999999"],
}
# Flags read only in some setting: their cases give that setting too.
CONTEXT_ARGS = {"--link-gbps": ["--prefill-replicas", "1"], "--link-latency-us": ["--prefill-replicas", "1"],
                "--prefill-gpu": ["--prefill-replicas", "1"]}

# Extra arguments that keep a command's valid runs short (dropped when the case is about them).
SPEED_ARGS = {"sweep": ["--dry-run"], "generate": ["--prompt-len", "4", "--gen-len", "2"],
              "serve": ["--requests", "2", "--prompt", "8", "--output", "2"]}


def samples(setup, lpu):
    """One valid input per format (made once, shared read-only by all cases)."""
    s = {
        "arch-config": os.path.join(ROOT, "configs", "lpu-small.yaml"),
        "workload": os.path.join(ROOT, "workloads", "gemv.yaml"),
        "llm": "tiny-opt",
        "graph-json": os.path.join(ROOT, "tests", "fixtures", "torch-2.11", "ops", "routing_make_fx.json"),
        "program": os.path.join(ROOT, "fuzz", "corpus", "fuzz_asm", "small.s"),
        "sweep-file": os.path.join(setup, "tiny-sweep.yaml"),
        "report-input": os.path.join(setup, "run.json"),
        "results-dir": os.path.join(setup, "shards"),
        "serve-trace": _file(setup, "trace.csv", b"arrival_s,prompt_tokens,output_tokens\n0,8,2\n0.1,8,2\n"),
        "cost-cache": os.path.join(setup, "cost-cache.json"),
        "gpu-config": "h200",
    }
    with open(s["sweep-file"], "w") as f:
        f.write("name: tiny\nbase: lpu-small\nworkloads: [%s]\nfusion: [greedy]\naxes:\n  hbm.bandwidth_gbps: [128]\n"
                % s["workload"])
    for args in (["run", s["workload"], "--json", s["report-input"]],
                 ["sweep", s["sweep-file"], "-o", s["results-dir"], "--shard", "0/1", "-j", "1"]):
        subprocess.run([lpu] + args, check=True, stdout=subprocess.DEVNULL, timeout=120 * TIMEOUT_SCALE)
    return s


# ---- path classes: each a function (case dir, format extension) -> path, or a skip reason -----

def _file(d, name, data=b"x\n"):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def _dir(d, name):
    p = os.path.join(d, name)
    os.mkdir(p)
    return p


def _fifo(d, ext):
    p = os.path.join(d, "fifo" + ext)
    os.mkfifo(p)
    return p


def _device(d, name, device):
    """A link to the device in the case's directory: the error must name the path given, and a
    writer that replaces its output by a rename replaces the link, never the device (as root,
    `--cost-cache /dev/null` once turned /dev/null into a regular file)."""
    p = os.path.join(d, name)
    os.symlink(device, p)
    return p


def _unreadable(d, ext):
    if IS_ROOT:
        return Skip("unreadable: running as root, which reads a file of mode 000")
    p = _file(d, "unreadable" + ext)
    os.chmod(p, 0)
    return p


def _readonly_parent(d, name):
    if IS_ROOT:
        return Skip("parent_readonly: running as root, which writes into a directory of mode 555")
    p = _dir(d, "readonly")
    os.chmod(p, stat.S_IRUSR | stat.S_IXUSR)
    return os.path.join(p, name)


class Skip(str):
    pass


# An input that is not a file is refused saying what it is (a case's error line must say so).
# A message quotes what it found escaped: a raw NUL cut the message short, other control bytes
# garbled the terminal.
CONTROL_BYTES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
SAYS_WHAT_IT_IS = {"directory": "directory", "fifo": "FIFO", "dev_zero": "device", "dev_null": "device",
                   "missing": "no such"}


INPUT_PATHS = {
    "directory": lambda d, ext: _dir(d, "dir" + ext),
    "fifo": _fifo,
    "dev_zero": lambda d, ext: _device(d, "dev-zero" + ext, "/dev/zero"),
    "dev_null": lambda d, ext: _device(d, "dev-null" + ext, "/dev/null"),
    "missing": lambda d, ext: os.path.join(d, "missing", "nothing" + ext),
    "unreadable": _unreadable,
}
OUTPUT_FILE_PATHS = {  # class -> (make, exit)
    "directory": (lambda d: _dir(d, "out-dir"), 2),
    "parent_is_file": (lambda d: os.path.join(_file(d, "plain.txt"), "out.json"), 2),
    "parent_readonly": (lambda d: _readonly_parent(d, "out.json"), 2),
    "parent_proc": (lambda d: "/proc/lpu-bad-input/out.json", 2),
    "dev_null": (lambda d: _device(d, "dev-null.json", "/dev/null"), 0),  # writing into /dev/null is valid
    "missing_parents": (lambda d: os.path.join(d, "new", "sub", "out.json"), 0),  # they are created
}
OUTPUT_DIR_PATHS = {
    "regular_file": (lambda d: _file(d, "plain.txt"), 2),
    "fifo": (lambda d: _fifo(d, ""), 2),
    "dev_null": (lambda d: _device(d, "dev-null", "/dev/null"), 2),
    "parent_is_file": (lambda d: os.path.join(_file(d, "plain.txt"), "out"), 2),
    "parent_readonly": (lambda d: _readonly_parent(d, "out"), 2),
    "parent_proc": (lambda d: "/proc/lpu-bad-input/out", 2),
    "missing_parents": (lambda d: os.path.join(d, "new", "sub", "out"), 0),
}
# SystemC's VCD writer makes a file of its own (PATH.vcd unless PATH ends in .vcd): a device is refused.
OUTPUT_EXIT_BY_FORMAT = {("vcd", "dev_null"): 2}
# A FIFO as an output file is not a case: writing into one waits for its reader, as with any
# program (and `--json /dev/stdout` is a pipe when the output is piped).


# ---- the cases ------------------------------------------------------------------------------------

class Case:
    def __init__(self, command, option, cls, make, exits):
        self.command, self.option, self.cls, self.make, self.exits = command, option, cls, make, exits

    @property
    def name(self):
        return "%s %s %s" % (self.command, self.option["name"], self.cls)


def cases_for_option(command, o):
    kind, fmt = o["kind"], o["format"]
    if kind == "input":
        ext, contents = FORMATS[fmt]
        for cls, make in INPUT_PATHS.items():
            if cls == "directory" and fmt in DIRECTORY_FORMATS:
                make = lambda d, ext: _dir(d, "empty-dir")  # noqa: E731
            yield Case(command, o, cls, lambda d, make=make, ext=ext: make(d, ext), INPUT_EXITS.get((fmt, cls), {2}))
        if fmt == "results-dir":
            yield Case(command, o, "regular_file", lambda d: _file(d, "plain.txt"), {2})
        for cls, name, data in contents:
            yield Case(command, o, cls, lambda d, name=name, data=data: _file(d, name, data),
                       INPUT_EXITS.get((fmt, cls), {2}))
    elif kind in ("output-file", "output-dir"):
        table = OUTPUT_FILE_PATHS if kind == "output-file" else OUTPUT_DIR_PATHS
        for cls, (make, code) in table.items():
            yield Case(command, o, cls, make, {OUTPUT_EXIT_BY_FORMAT.get((fmt, cls), code)})
    elif kind in NUMBERS:
        for v in NUMBERS[kind]:
            yield Case(command, o, "number " + v, lambda d, v=v: v, {2})


def all_cases(spec):
    only_classes = set(filter(None, os.environ.get("LPU_CLASSES", "").split(",")))
    only_command = os.environ.get("LPU_CLASSES_COMMAND")
    for c in spec["commands"]:
        if only_command and c["command"] != only_command:
            continue
        for o in c["options"]:
            for case in cases_for_option(c["command"], o):
                if not only_classes or case.cls.split(" ")[0] in only_classes:
                    yield case


def arguments(case, spec_options, sample, case_dir, target_value):
    """The command line: the target option set to the bad value; every other needed option valid."""
    args = case.command.split()
    flags = []
    for o in spec_options:
        if o is case.option:
            value = target_value
        elif o["needed"]:
            value = sample[o["format"]] if o["kind"] == "input" else os.path.join(case_dir, "valid-" + o["name"].strip("-"))
        else:
            continue
        if o["positional"]:
            args.append(value)
        else:
            flags += [o["names"][0], value]
    extra = SPEED_ARGS.get(case.command, [])
    if case.option["names"] and any(n in extra for n in case.option["names"]):
        extra = []
    return args + flags + extra + CONTEXT_ARGS.get(case.option["name"], [])


def _without(line, names):
    for n in names:
        line = line.replace(n, "").replace(os.path.basename(n), "")
    return line


def run_case(lpu, case, spec_options, sample, workdir):
    d = tempfile.mkdtemp(prefix="case-", dir=workdir)
    target = case.make(d)
    if isinstance(target, Skip):
        return "skip", str(target)
    args = arguments(case, spec_options, sample, d, target)
    shown = " ".join(args)
    try:
        p = subprocess.run([lpu] + args, cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S * TIMEOUT_SCALE)
    except subprocess.TimeoutExpired:
        return "fail", "lpu %s: no answer within %d s" % (shown, RUN_TIMEOUT_S * TIMEOUT_SCALE)
    out = p.stdout.decode("utf-8", "replace")
    tail = out[-1500:]
    if p.returncode < 0:
        return "fail", "lpu %s: killed by signal %d:\n%s" % (shown, -p.returncode, tail)
    if "internal error" in out:
        return "fail", "lpu %s: an internal error (exit %d):\n%s" % (shown, p.returncode, tail)
    if p.returncode not in case.exits:
        return "fail", "lpu %s: exit %d, expected %s:\n%s" % (shown, p.returncode, sorted(case.exits), tail)
    if len(p.stdout) > MAX_OUTPUT:
        return "fail", "lpu %s: printed %d bytes" % (shown, len(p.stdout))
    if p.returncode == 2:
        errors = [l for l in out.splitlines() if l.startswith("error: ")]
        names = [target] if case.option["kind"] not in NUMBERS else case.option["names"]
        if not errors:
            return "fail", "lpu %s: exit 2 without an 'error: ' line:\n%s" % (shown, tail)
        if not any(n in l for l in errors for n in names):
            return "fail", "lpu %s: the error does not name %s:\n%s" % (shown, " or ".join(names), tail)
        if CONTROL_BYTES.search(out):
            return "fail", "lpu %s: the error prints raw control bytes (quote them escaped):\n%r" % (shown, tail)
        says = SAYS_WHAT_IT_IS.get(case.cls) if case.option["kind"] == "input" else None
        if case.cls.startswith("binary") and not any("binary" in _without(l, names) for l in errors):
            says = "binary"  # said by the message, not by the file's name
        if says and case.option["format"] not in DIRECTORY_FORMATS and not any(says in _without(l, names) for l in errors):
            return "fail", "lpu %s: the error does not say '%s':\n%s" % (shown, says, tail)
    shutil.rmtree(d, ignore_errors=True)
    return "ok", ""


@pytest.fixture(scope="module")
def spec(request):
    lpu = _lpu(request)
    p = subprocess.run([lpu, "cli-spec"], stdout=subprocess.PIPE, check=True)
    return json.loads(p.stdout)


def _lpu(request):
    path = request.config.getoption("--lpu") or os.environ.get("LPU_BIN") or os.path.join(ROOT, "build", "lpu")
    return os.path.abspath(path)


def test_every_option_is_classified(spec):
    problems = []
    for c in spec["commands"]:
        for o in c["options"]:
            if o["kind"] == "unknown":
                problems.append("%s %s: unknown kind: classify it in apps/lpu/cli_kinds.cpp (kRules)" % (c["command"], o["name"]))
            elif o["kind"] == "input" and o["format"] not in FORMATS:
                problems.append("%s %s: input format '%s' has no sample or classes in %s"
                                % (c["command"], o["name"], o["format"], os.path.basename(__file__)))
    assert not problems, "\n".join(problems)
    assert len(spec["commands"]) >= 10, "lpu cli-spec lists %d commands" % len(spec["commands"])


def test_bad_input_classes(spec, request, capsys):
    lpu = _lpu(request)
    workdir = tempfile.mkdtemp(prefix="lpu-classes-")
    try:
        sample = samples(_dir(workdir, "setup"), lpu)
        options = {c["command"]: c["options"] for c in spec["commands"]}
        cases = [c for c in all_cases(spec) if c.option["kind"] != "input" or c.option["format"] in FORMATS]
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda c: run_case(lpu, c, options[c.command], sample, workdir), cases))
        wall = time.monotonic() - t0
    finally:
        _make_removable(workdir)
        shutil.rmtree(workdir, ignore_errors=True)
    failures = [(c, msg) for c, (status, msg) in zip(cases, results) if status == "fail"]
    skipped = sorted({msg for status, msg in results if status == "skip"})
    classes = sorted({c.cls.split(" ")[0] for c in cases})
    with capsys.disabled():
        print("\nbad input by class: %d cases (%d options of %d commands, %d classes) in %.1f s: %d failed, %d skipped"
              % (len(cases), len({(c.command, c.option["name"]) for c in cases}), len(options), len(classes), wall,
                 len(failures), sum(1 for s, _ in results if s == "skip")))
        for reason in skipped:
            print("  skipped: " + reason)
    assert not failures, "%d of %d cases failed:\n\n%s" % (
        len(failures), len(cases), "\n\n".join("[%s] %s" % (c.name, m) for c, m in failures))


def _make_removable(path):
    for d, _, _ in os.walk(path):
        try:
            os.chmod(d, stat.S_IRWXU)
        except OSError:
            pass

