#!/usr/bin/env python3
"""Fails when a C++ function is longer than the limit (100 lines, from the first line of its
signature to its closing brace), so that long orchestrators get split into named phases.

    scripts/check_funclen.py                 # compiler/ sim/ tuner/ apps/ workbench/ bindings/, limit 100
    scripts/check_funclen.py --max 60 PATH... # other limits, other files or directories
    scripts/check_funclen.py --top 20         # also list the 20 longest functions

A function whose body is a data table (one row per line, nothing to split) is exempt when the line
right above its signature is the comment `// funclen: table`; use it for data tables only.

The scan is lexical, not a C++ parser: comments, string and character literals (raw strings too)
and preprocessor lines are blanked first; then a `{` whose header ends like a function signature
(`...)`, `...) const`, `...) -> T`, a constructor's `...) : member(...)`) outside any other
function opens a function. Lambdas and local classes count towards the enclosing function.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIRS = ["compiler", "sim", "tuner", "apps", "workbench", "bindings"]
SUFFIXES = (".h", ".hpp", ".cc", ".cpp")
MARKER = "funclen: table"
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return|try)\b")
TYPE_DECL = re.compile(r"^\s*(template\s*<.*>\s*)?(class|struct|namespace|enum|union)\b")
SIGNATURE_END = re.compile(r"\)\s*(const|override|noexcept|final|mutable|&|&&|\s|->\s*[\w:<>,\s\*&]+)*$")
CTOR_INIT = re.compile(r"\)\s*:\s*\w")


def blank_non_code(src):
    """The source with comments, literals and preprocessor lines blanked, newlines kept."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        raw = re.match(r'R"([^(\s]*)\(', src[i:i + 40])
        if raw and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = ")" + raw.group(1) + '"'
            j = src.find(end, i + raw.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        if c == '"' or (c == "'" and not (i > 0 and src[i - 1].isalnum())):  # 1'000 is a digit separator
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        if c == "#" and src[src.rfind("\n", 0, i) + 1:i].strip() == "":
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] != "\\":
                    break
                j = k + 1
            out.append("\n" * src.count("\n", i, k))
            i = k
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_function_header(header):
    h = " ".join(header.split())
    if not h or CONTROL.match(h) or TYPE_DECL.match(h) or re.search(r"\]\s*\(", h):
        return False
    if SIGNATURE_END.search(h) and "=" not in h.split("(")[0]:
        return True
    return bool(CTOR_INIT.search(h))


def functions(src):
    """(first line, last line, name) of every function defined outside another function."""
    code = blank_non_code(src)
    found, stack, header_start, line = [], [], 0, 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        if c not in ";{}":
            continue
        if c == "{":
            header = code[header_start:i]
            in_function = any(kind == "function" for kind, _, _ in stack)
            kind = "function" if not in_function and is_function_header(header) else "other"
            lead = len(header) - len(header.lstrip())
            first = code.count("\n", 0, header_start) + 1 + header[:lead].count("\n")
            name = re.search(r"([~\w:]+(?:operator\S*)?)\s*\(", " ".join(header.split()))
            stack.append((kind, first, name.group(1) if name else header.strip()[:40]))
        elif c == "}" and stack:
            kind, first, name = stack.pop()
            if kind == "function":
                found.append((first, line, name))
        header_start = i + 1
    return found


def source_files(paths):
    files = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
            continue
        try:  # tracked files only when it is a git checkout: build outputs stay out
            listed = subprocess.run(["git", "-C", ROOT, "ls-files", "--", os.path.relpath(p, ROOT)],
                                    capture_output=True, text=True, check=True).stdout.split()
            files += [os.path.join(ROOT, f) for f in listed]
        except (subprocess.CalledProcessError, FileNotFoundError, ValueError):
            for d, _, names in os.walk(p):
                files += [os.path.join(d, n) for n in names]
    return sorted(f for f in files if f.endswith(SUFFIXES) and os.path.isfile(f))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="files or directories (default: %s)" % " ".join(DEFAULT_DIRS))
    ap.add_argument("--max", type=int, default=100, help="longest allowed function, in lines")
    ap.add_argument("--top", type=int, default=0, help="also print the N longest functions")
    args = ap.parse_args(argv)
    paths = args.paths or [os.path.join(ROOT, d) for d in DEFAULT_DIRS if os.path.isdir(os.path.join(ROOT, d))]
    rows, exempt = [], 0
    for path in source_files(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            src = f.read()
        lines = src.split("\n")
        for first, last, name in functions(src):
            if first >= 2 and MARKER in lines[first - 2]:
                exempt += 1
                continue
            rows.append((last - first + 1, os.path.relpath(path, ROOT), first, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for n, path, first, name in rows[:args.top]:
        print(f"{n:5d} {path}:{first} {name}")
    long_ones = [r for r in rows if r[0] > args.max]
    for n, path, first, name in long_ones:
        print(f"{path}:{first}: function {name} is {n} lines (limit {args.max})", file=sys.stderr)
    if long_ones:
        print(f"check_funclen: split each into named phases (a data table: `// {MARKER}` on the "
              "line above its signature)", file=sys.stderr)
    print(f"check_funclen: {len(rows)} functions, {len(long_ones)} over {args.max} lines, {exempt} data tables exempt")
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
