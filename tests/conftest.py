"""pytest configuration of the Python tests (docs/python.md). ctest runs each test file with the
options below (tests/CMakeLists.txt); by hand, e.g.

    PYTHONPATH=python:reports /usr/bin/python3 -m pytest tests/tuner_sweep_test.py --lpu build/lpu

Fixtures: `lpu` (the binary), `workdir` (a scratch directory, emptied first), `check` (soft
checks: every check of a test runs, and the test fails at the end listing each failed one).
"""
import os
import shutil

import pytest

from lpu_workbench.checks import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_addoption(parser):
    g = parser.getgroup("lpu", "the LPU workbench's end-to-end tests")
    g.addoption("--lpu", help="the lpu binary (default: $LPU_BIN, else build/lpu)")
    g.addoption("--workdir", help="scratch directory, emptied first (default: a pytest tmp dir)")
    g.addoption("--reference", help="the uninterrupted sweep's directory (sweep_test.py leaves it in WORKDIR/full)")
    g.addoption("--workloads", nargs="*", default=[], help="workload names or files to run")
    g.addoption("--graphs", nargs="*", default=[], help="graph files or directories of them to run")
    g.addoption("--no-workloads", action="store_true", help="triton_emit_test.py: only --graphs, no workload files")
    g.addoption("--min-checked", type=int, default=1, help="torch_graph_test.py: fewest graphs that must be checked")
    g.addoption("--jobs", type=int, default=2, help="parallel lpu processes")
    g.addoption("--layer-sources", help="layers_test.py: the build's layer_sources.txt manifest")
    g.addoption("--cmake", default="cmake", help="layers_test.py: the cmake binary")
    g.addoption("--generator", default="Ninja", help="layers_test.py: the CMake generator")


@pytest.fixture
def lpu(request):
    path = request.config.getoption("--lpu") or os.environ.get("LPU_BIN") or os.path.join(ROOT, "build", "lpu")
    if not os.path.exists(path):
        pytest.fail("no lpu binary at %s (pass --lpu or set LPU_BIN)" % path)
    return os.path.abspath(path)


@pytest.fixture
def workdir(request, tmp_path):
    path = request.config.getoption("--workdir")
    if not path:
        return str(tmp_path)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return os.path.abspath(path)


@pytest.fixture
def option(request):
    """option("--name"): a command-line option of this conftest."""
    return request.config.getoption


@pytest.fixture
def check():
    return Checks()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test that used `check` fails when any of its checks did (after all of them ran)."""
    outcome = yield
    checks = getattr(item, "funcargs", {}).get("check")
    if isinstance(checks, Checks) and checks.failures and outcome.excinfo is None:
        pytest.fail(checks.summary(), pytrace=False)
