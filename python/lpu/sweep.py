"""Sweeps from Python (docs/sweeps.md): read a sweep's results, list a sweep file's points, or
run them in process on a thread pool.

    df = lpu.sweep.load("out/sweeps/hbm_lmu")            # DIR/results.jsonl (or its shards)
    df = lpu.sweep.run("configs/sweeps/hbm_lmu.yaml", workers=2)

Rows are the sweep's (sweep/sweep_store.h): identity columns (point_id, status, exit_code,
error, workload, fusion, one per axis, wall_s, trace, sweep_hash), then every scalar statistic
under its dotted name, as in results.csv."""
import json
import time
from concurrent.futures import ThreadPoolExecutor

from .errors import LpuError
from .result import frame


def _native():
    from . import _lpu
    return _lpu


def _rows_or_frame(rows, as_frame):
    if as_frame is None:
        try:
            import pandas  # noqa: F401
            as_frame = True
        except ImportError:
            as_frame = False
    return frame(rows) if as_frame else rows


def load(directory, as_frame=None):
    """The rows of a sweep directory: a pandas DataFrame (scalar columns, as results.csv) when
    pandas is installed or as_frame=True; else (or as_frame=False) a list of dicts, complete
    (nested kernels included, as results.jsonl)."""
    if not isinstance(directory, str) and not hasattr(directory, "__fspath__"):
        raise TypeError("directory: expected a path, got %s" % type(directory).__name__)
    import os
    return _rows_or_frame(json.loads(_native().sweep_load(os.fspath(directory))), as_frame)


def points(sweep_file):
    """The points of a sweep file as `lpu sweep` expands them (checked as it checks them): dicts
    of point_id, workload, workload_file, fusion, arch (the base config), sets (the --set
    assignments) and axes."""
    import os
    return json.loads(_native().sweep_points(os.fspath(sweep_file)))


def run_point(point):
    """One point, in process: its row (a failed point's row has status failed and the error)."""
    native = _native()
    c = native._Common((point["workload_file"], "", ""), point["arch"], point["fusion"], point["sets"], "error", "", 0)
    identity = {"point_id": point["point_id"], "status": "ok", "exit_code": 0, "error": "",
                "workload": point["workload"], "fusion": point["fusion"]}
    identity.update(point["axes"])
    t0 = time.monotonic()
    try:
        js = native.run(c, False, False)[0]
    except LpuError as e:
        js = ""
        identity.update(status="failed", exit_code=e.exit_code, error=str(e))
    identity.update(wall_s=round(time.monotonic() - t0, 3), trace="", sweep_hash=point["sweep_hash"])
    return json.loads(native.result_row(json.dumps(identity), js))


def run(sweep_file, workers=1, as_frame=None):
    """Every point of a (run) sweep file in process, `workers` threads at a time; rows in the
    points' order. Nothing is written: `lpu sweep` is the command for a results directory."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise TypeError("workers: expected an int >= 1, got %r" % (workers,))
    pts = points(sweep_file)
    if workers == 1:
        rows = [run_point(p) for p in pts]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            rows = list(pool.map(run_point, pts))
    return _rows_or_frame(rows, as_frame)
