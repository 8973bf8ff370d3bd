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


# Fusion policies keep their colour in every plot of every report (PALETTE order otherwise).
POLICY_COLOURS = {"none": PALETTE[0], "greedy": PALETTE[1], "search": PALETTE[2], "search-isu": PALETTE[3]}


def policy_colours(names):
    """Colours for fusion policies: the fixed ones above, the next free palette colours after."""
    out = {}
    free = [c for c in PALETTE if c not in POLICY_COLOURS.values()]
    for n in names:
        if n not in out:
            out[n] = POLICY_COLOURS.get(n) or free[len([k for k in out if k not in POLICY_COLOURS]) % len(free)]
    return out


def legend_outside(ax, **kw):
    """A legend right of the axes, so it never covers bars, points or labels."""
    kw.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)


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


def time_unit(max_us):
    """(divisor of µs, label) so that the largest value reads between 1 and 1000."""
    return (1e6, "s") if max_us >= 1e6 else (1e3, "ms") if max_us >= 1e3 else (1.0, "µs")


def byte_unit(max_bytes):
    """(divisor of bytes, label) in decimal units, like the CLI's (compiler/support/units.h)."""
    for div, label in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if max_bytes >= div:
            return div, label
    return 1.0, "B"

