"""A job's result: the dict of its --json file (the same keys and values), with what the CLI
prints (`text`) and a pandas view (`to_frame()`)."""
import json


def _scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def frame(rows):
    """A DataFrame of rows, keeping the scalar columns (the sweep CSV's); needs pandas."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("to_frame() needs pandas (Debian: python3-pandas)") from e
    return pd.DataFrame([{k: v for k, v in r.items() if _scalar(v)} for r in rows])


def flat(native, run):
    """A run's dict as a sweep row: workload and fusion first, then every scalar under its dotted
    name (engines.vxe.utilization), as results.csv has them."""
    identity = {}
    w = run.get("workload")
    if w is not None:
        identity["workload"] = w.get("name") if isinstance(w, dict) else w
    if "fusion" in run:
        identity["fusion"] = run["fusion"]
    return json.loads(native.result_row(json.dumps(identity), json.dumps(run)))


class Result(dict):
    text = ""
    kind = ""
    trace = None

    @classmethod
    def from_json(cls, js, text, kind):
        r = cls(json.loads(js))
        r.text, r.kind = text, kind
        return r

    def rows(self):
        """What to_frame() tabulates: run: the run, flattened as a sweep row; compare: a row per
        policy; generate: a row per step; serve: a row per request."""
        from . import _lpu
        if self.kind == "compare":
            return [flat(_lpu, r) for r in self["runs"]]
        if self.kind == "generate":
            return list(self["steps"])
        if self.kind == "serve":
            return list(self["requests"])
        return [flat(_lpu, self)]

    def to_frame(self):
        return frame(self.rows())

    def __repr__(self):
        return "lpu.Result(%s, %d keys)" % (self.kind, len(self))
