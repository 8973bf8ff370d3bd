"""Shared plotting helpers: one colour per fusion policy / workload, file output, NoData."""
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

PALETTE = plt.get_cmap("tab10").colors
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


class NoData(Exception):
    """The inputs lack what a plot needs; the message goes into the page instead."""


class Plot:
    def __init__(self, file, title, caption=""):
        self.file = file
        self.title = title
        self.caption = caption


def colour_map(names):
    """Stable colours: the i-th distinct name (in order of appearance) gets the i-th colour."""
    out = {}
    for n in names:
        if n not in out:
            out[n] = PALETTE[len(out) % len(PALETTE)]
    return out


def marker_map(names):
    out = {}
    for n in names:
        if n not in out:
            out[n] = MARKERS[len(out) % len(MARKERS)]
    return out


def unique(seq):
    seen, out = set(), []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def save(fig, out_dir, name, title, caption=""):
    fig.savefig(os.path.join(out_dir, name), dpi=100, bbox_inches="tight")
    plt.close(fig)
    return Plot(name, title, caption)


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt_value(v):
    if isinstance(v, float):
        return "%g" % v
    return str(v)
