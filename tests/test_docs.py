"""The documentation stays reachable and true to the tree (ctest docs_checks):

- docs/index.md links every page of docs/ (a newcomer reaches every topic from the README,
  which links the index);
- every relative link of README.md and of docs/*.md points to a file that exists, and a link
  to a section (#anchor) of a Markdown file to a heading that exists;
- README.md stays a map: at most 300 lines (scripts/format-check.sh fails above that too);
- docs/layers.svg is what scripts/layer_diagram.py makes of the current layers.txt.
"""
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pages():
    return sorted(os.path.relpath(p, DOCS) for p in glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    found, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"^#+\s+(.*?)\s*$", line)
            if m:
                text = re.sub(r"[^\w\- ]", "", m.group(1).lower())
                found.add(text.replace(" ", "-"))
    return found


def links(path):
    fence = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
            if not fence:
                for target in LINK.findall(line):
                    yield n, target


def test_index_lists_every_page():
    with open(os.path.join(DOCS, "index.md"), encoding="utf-8") as f:
        listed = {t.split("#")[0] for t in LINK.findall(f.read())}
    missing = [p for p in pages() if p not in listed]
    assert not missing, "docs/index.md does not link: %s" % ", ".join(missing)


@pytest.mark.parametrize("doc", ["README.md"] + ["docs/" + p for p in pages()])
def test_relative_links_resolve(doc):
    path = os.path.join(ROOT, doc)
    bad = []
    for n, target in links(path):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            bad.append("%s:%d: %s: no such file" % (doc, n, target))
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append("%s:%d: %s: no heading with that anchor" % (doc, n, target))
    assert not bad, "\n".join(bad)


def test_readme_is_a_map():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        n = sum(1 for _ in f)
    assert n <= 300, "README.md has %d lines (at most 300: move details to docs/)" % n


def test_layer_diagram_is_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "layer_diagram.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (the lead regenerates it after merging layers.txt changes)"
