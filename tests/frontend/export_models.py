#!/usr/bin/python3
"""Exports the model zoo (models.py) to OUT_DIR/<name>.json + .bin.

    PYTHONPATH=python /usr/bin/python3 tests/frontend/export_models.py [--clean] OUT_DIR [NAME...]

(python/ on PYTHONPATH, or the package installed: docs/python.md; models.py is found next to
this script, which Python puts first on sys.path.)

--clean first removes the *.json / *.bin files in OUT_DIR (so no stale export is checked).
Prints one line per model: name, node count, the ATen ops it uses.
"""

import os
import sys
import time

import lpu_frontend
import models


def main(argv):
    if "-h" in argv[1:] or "--help" in argv[1:]:
        print(__doc__)
        return 0
    clean = "--clean" in argv
    argv = [a for a in argv if a != "--clean"]
    unknown = [a for a in argv[1:] if a.startswith("-")]
    if unknown:  # never export into a folder named like an option
        print(f"unknown option {unknown[0]}\n{__doc__}", file=sys.stderr)
        return 2
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, names = argv[1], argv[2:] or list(models.MODELS)
    if clean and os.path.isdir(out_dir):
        for f in os.listdir(out_dir):
            if f.endswith((".json", ".bin")):
                os.remove(os.path.join(out_dir, f))
    for name in names:
        if name not in models.MODELS:
            print(f"unknown model {name}; known: {', '.join(models.MODELS)}", file=sys.stderr)
            return 2
    for name in names:
        t0 = time.time()
        model, inputs = models.build(name)
        e = lpu_frontend.export(model, inputs, os.path.join(out_dir, f"{name}.json"))
        print(f"{name}: {e.nodes} nodes, {time.time() - t0:.2f} s, ops: {' '.join(e.ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
