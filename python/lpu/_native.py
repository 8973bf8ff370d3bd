"""Finds the compiled half of the package, `_lpu` (bindings/python, built by CMake into
BUILD/python/). In order: $LPU_BUILD_DIR/python, an importable `_lpu` (PYTHONPATH=build/python,
or an install that put it on the path), then build/python of the checkout this file is in (the
editable install and PYTHONPATH=python). Nothing is added to sys.path."""
import glob
import importlib.machinery
import importlib.util
import os
import sys


def _load_from(directory):
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for path in sorted(glob.glob(os.path.join(directory, "_lpu" + suffix))):
            spec = importlib.util.spec_from_file_location("_lpu", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules["_lpu"] = module
            return module
    return None


def load():
    tried = []
    env = os.environ.get("LPU_BUILD_DIR")
    if env:
        directory = os.path.join(env, "python")
        module = _load_from(directory)
        if module:
            return module
        tried.append(directory + " ($LPU_BUILD_DIR)")
    try:
        import _lpu
        return _lpu
    except ImportError:
        tried.append("the import path")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    directory = os.path.join(repo, "build", "python")
    module = _load_from(directory)
    if module:
        return module
    tried.append(directory)
    raise ImportError("lpu: the compiled module _lpu was not found (looked in %s); build it with "
                      "`ninja -C build _lpu` (docs/python.md), or set LPU_BUILD_DIR" % ", ".join(tried))
