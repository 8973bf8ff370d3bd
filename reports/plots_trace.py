"""Timeline of a Chrome trace-event file: one lane per engine (thread), slices coloured by kernel."""
from plot_util import NoData, colour_map, plt, save, unique

MAX_TRACES = 6


def timeline(traces, out_dir, name="timeline.png"):
    usable = []
    for t in traces:
        slices = [e for e in t.events if e.get("ph") == "X" and "ts" in e and "dur" in e]
        if slices:
            usable.append((t, slices))
    if not usable:
        raise NoData("no trace with slices (ph \"X\") was given; record one with `lpu run ... --trace FILE`")
    usable = usable[:MAX_TRACES]
    end = max(max(e["ts"] + e["dur"] for e in s) for _, s in usable)
    kernels = unique(e.get("cat") or e.get("args", {}).get("kernel", "") for _, s in usable for e in s)
    cmap = plt.get_cmap("tab20").colors
    colours = {k: cmap[i % 20] for i, k in enumerate(colour_map(kernels))}
    fig, axes = plt.subplots(len(usable), 1, figsize=(12, 1.0 + 1.3 * sum(
        len({e["tid"] for e in s}) * 0.6 + 0.6 for _, s in usable)), sharex=True, squeeze=False)
    for ax, (t, slices) in zip(axes[:, 0], usable):
        names = {e["tid"]: e["args"]["name"] for e in t.events
                 if e.get("ph") == "M" and e.get("name") == "thread_name" and "args" in e}
        tids = sorted({e["tid"] for e in slices})
        for row, tid in enumerate(tids):
            mine = [e for e in slices if e["tid"] == tid]
            by_kernel = {}
            for e in mine:
                by_kernel.setdefault(e.get("cat", ""), []).append((e["ts"], e["dur"]))
            for k, spans in by_kernel.items():
                ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colours.get(k, "grey"))
        ax.set_yticks(range(len(tids)))
        ax.set_yticklabels([names.get(tid, "tid %s" % tid) for tid in tids])
        ax.set_ylim(-0.6, len(tids) - 0.4)
        ax.invert_yaxis()
        t_end = max(e["ts"] + e["dur"] for e in slices)
        ax.set_title("%s: %.3f µs, %d slices" % (t.label, t_end, len(slices)), fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        mine = unique(e.get("cat", "") for e in slices)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[k]) for k in mine[:10]]
        ax.legend(handles, mine[:10], title="kernel" + (" (first 10 of %d)" % len(mine) if len(mine) > 10 else ""),
                  fontsize=6, title_fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1, 0].set_xlim(0, end * 1.01)
    axes[-1, 0].set_xlabel("time (µs)")
    fig.suptitle("Timeline per engine (same time scale for every run)")
    fig.tight_layout()
    return save(fig, out_dir, name, "Timeline",
                "One lane per engine, one slice per instruction, coloured by kernel, drawn from the "
                "Chrome trace-event files (open them in ui.perfetto.dev for detail).")
