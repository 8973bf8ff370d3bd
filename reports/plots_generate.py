"""Plots of `lpu generate --json` results (docs/generate.md): latency and HBM bytes against
position, one line per generation."""
import matplotlib.pyplot as plt

from plot_util import NoData, colour_map, legend_outside, save


def label(g):
    return "%s on %s (%s, %d+%d)" % (g["workload"].get("name", "?"), g["arch"].get("name", "?"), g.get("fusion", "?"),
                                     g.get("prompt_len", 0), g.get("gen_len", 0))


def latency_vs_position(gens, out_dir):
    """Each decode step's latency against the position of the token it produces; the prefill
    (TTFT) is marked apart, since it is usually far above the decode steps."""
    if not any(len(g.get("steps", [])) > 1 for g in gens):
        raise NoData("no generation has a decode step (gen_len 1)")
    colours = colour_map(label(g) for g in gens)
    # Microseconds for small models, so the axis does not read 0.0077831; the axis starts at 0,
    # so a 0.1 % wobble does not look like a jump (growth with the KV cache stays visible).
    peak = max((s["latency_s"] for g in gens for s in g.get("steps", []) if s["phase"] == "decode"), default=0)
    unit, scale = ("ms", 1e3) if peak >= 1e-3 else ("µs", 1e6)
    fig, ax = plt.subplots(figsize=(8, 4))
    for g in gens:
        dec = [s for s in g["steps"] if s["phase"] == "decode"]
        c = colours[label(g)]
        ax.plot([s["position"] for s in dec], [s["latency_s"] * scale for s in dec], color=c, label=label(g))
        if dec:
            ttft = g["steps"][0]["latency_s"] * scale
            ax.annotate("TTFT %.4g %s" % (ttft, unit), (dec[0]["position"], dec[0]["latency_s"] * scale), fontsize=7,
                        color=c, textcoords="offset points", xytext=(4, -12))
    ax.set_ylim(0, peak * scale * 1.15)  # head room: the line and its label stay inside
    ax.set_xlabel("position of the generated token")
    ax.set_ylabel("decode step latency (%s)" % unit)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return save(fig, out_dir, "generate_latency.png", "Per-token latency vs position",
                "Simulated latency of each decode step (one token each) against the position of the token it "
                "produces; the context is one less. The prefill (time to first token) is the annotation.")


def bytes_vs_position(gens, out_dir):
    if not any(g.get("steps") for g in gens):
        raise NoData("no steps")
    colours = colour_map(label(g) for g in gens)
    fig, ax = plt.subplots(figsize=(8, 4))
    for g in gens:
        dec = [s for s in g["steps"] if s["phase"] == "decode"]
        ax.plot([s["position"] for s in dec], [s["hbm_bytes"] / 1e6 for s in dec], color=colours[label(g)], label=label(g))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("position of the generated token")
    ax.set_ylabel("HBM traffic per step (MB)")
    ax.grid(alpha=0.3)
    legend_outside(ax)
    caption = ("HBM bytes read + written by each decode step: the weights once, plus a KV cache growing by one "
               "token per step.")
    static = [label(g) for g in gens if g.get("static_kv_cache")]
    if static:  # a graph file's static cache: every step reads all of it (masked attention)
        caption += (" A static KV cache (%s) is read whole every step, whatever the position."
                    % ", ".join("%s: %d slots" % (l, g["static_kv_cache"]["max_cache_len"])
                                for l, g in zip(static, [g for g in gens if g.get("static_kv_cache")])))
    return save(fig, out_dir, "generate_hbm.png", "HBM traffic per decode step vs position", caption)


def energy_vs_position(gens, out_dir):
    """Each decode step's energy (= energy per generated token) against position, when the
    generations were simulated on a config with an energy section."""
    gens = [g for g in gens if g.get("energy") and any("energy_j" in s for s in g.get("steps", []))]
    if not gens:
        raise NoData("no generation has energy (its arch config needs an energy section: docs/config.md)")
    colours = colour_map(label(g) for g in gens)
    fig, ax = plt.subplots(figsize=(8, 4))
    peak = 0
    for g in gens:
        dec = [s for s in g["steps"] if s["phase"] == "decode"]
        ys = [s["energy_j"] * 1e3 for s in dec]
        peak = max([peak] + ys)
        ax.plot([s["position"] for s in dec], ys, color=colours[label(g)], label=label(g))
        if dec:
            ax.annotate("prefill %.4g mJ" % (g["steps"][0]["energy_j"] * 1e3), (dec[0]["position"], ys[0]), fontsize=7,
                        color=colours[label(g)], textcoords="offset points", xytext=(4, -12))
    ax.set_ylim(0, peak * 1.15 if peak > 0 else 1)
    ax.set_xlabel("position of the generated token")
    ax.set_ylabel("energy per decode step (mJ)")
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return save(fig, out_dir, "generate_energy.png", "Energy per token vs position",
                "Energy of each decode step (one token each): the simulator's counted events x the config's "
                "energies plus static power x the step's time; the prefill's is the annotation.")
