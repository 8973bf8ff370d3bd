"""`lpu generate` as a user drives it (docs/generate.md).

    pytest tests/generate_test.py::test_generate_cli --lpu LPU [--workdir DIR]
    pytest tests/generate_test.py::test_every_model --lpu LPU [--workdir DIR]

test_generate_cli: the step sequence, totals, CSV against JSON, determinism, each step against
`lpu run` of that step, plain progress lines off a terminal; test_every_model: one short
generation of every built-in LLM and of the HuggingFace static-cache decode graphs."""
import csv
import json
import os
import subprocess


def lpu_run(lpu, *args):
    p = subprocess.run([lpu] + list(args), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
    return p


def generate(check, lpu, work, tag, *args):
    js, cs = os.path.join(work, tag + ".json"), os.path.join(work, tag + ".csv")
    p = lpu_run(lpu, "generate", *args, "--json", js, "--csv", cs)
    check(p.returncode == 0, "%s: lpu generate %s exits 0" % (tag, " ".join(args)))
    with open(js) as f:
        j = json.load(f)
    with open(cs, newline="") as f:
        rows = list(csv.DictReader(f))
    return p, j, rows


def without_wall(j):
    return {k: v for k, v in j.items() if k != "wall"}


def step_yaml(work, model, step, name):
    """A workload file that is exactly one step of the generation (same name: same graph)."""
    path = os.path.join(work, "step%d.yaml" % step["step"])
    with open(path, "w") as f:
        f.write("name: %s\nmodel: %s\nphase: %s\nseq_len: %d\ncontext: %d\ndtype: f16\n"
                % (name, model, step["phase"], step["seq_len"], step["context"]))
    return path


def test_generate_cli(lpu, workdir, check):
    work = workdir
    P, G = 7, 5
    p, j, rows = generate(check, lpu, work, "a", "tiny-opt", "--prompt-len", str(P), "--gen-len", str(G))
    steps = j["steps"]
    check(len(steps) == G and j["steps_count"] == G, "gen_len %d steps" % G)
    check([s["position"] for s in steps] == list(range(P, P + G)), "positions prompt_len .. prompt_len+gen_len-1")
    check([s["context"] for s in steps] == [0] + list(range(P, P + G - 1)), "contexts 0, then prompt_len, +1 per step")
    check([s["phase"] for s in steps] == ["prefill"] + ["decode"] * (G - 1), "one prefill, then decode steps")
    check(j["hbm_bytes"] == sum(s["hbm_bytes"] for s in steps), "total HBM bytes == sum of the steps'")
    check(all(s["hbm_bytes"] == s["hbm_read_bytes"] + s["hbm_write_bytes"] for s in steps), "step bytes = read + write")
    check(j["total_cycles"] == sum(s["cycles"] for s in steps), "total cycles == sum of the steps'")
    check(j["ttft_s"] == steps[0]["latency_s"], "TTFT == the prefill step's latency")
    dec = sorted(s["latency_s"] for s in steps[1:])
    pt = j["per_token_latency_s"]
    check(pt["count"] == G - 1 and pt["min"] == dec[0] and pt["max"] == dec[-1], "per-token latency over the decode steps")
    check(pt["p50"] == dec[(len(dec) + 1) // 2 - 1], "p50 is the nearest-rank median")
    check(abs(j["tokens_per_s"] - G / j["total_latency_s"]) < 1e-9 * j["tokens_per_s"], "tokens/s = gen_len / total latency")
    cc = j["compile_cache"]
    check(cc["symbolic"] and cc["hits"] == cc["instantiated"] and cc["templates"] >= 1,
          "decode steps through symbolic programs: hits are instantiations")
    check(sum(s["program"] == "instantiated" for s in steps) == cc["instantiated"], "steps marked instantiated")
    check(steps[0]["program"] == "compiled", "the prefill is compiled")
    # --no-symbolic compiles every step; the cycles and bytes are the same.
    _, jn, _ = generate(check, lpu, work, "plain", "tiny-opt", "--prompt-len", str(P), "--gen-len", str(G), "--no-symbolic")
    check(jn["compile_cache"]["compiles"] == G and jn["compile_cache"]["hits"] == 0 and not jn["compile_cache"]["symbolic"],
          "--no-symbolic: every step compiled once, no hit (all shapes differ)")
    check([(s["cycles"], s["hbm_bytes"]) for s in jn["steps"]] == [(s["cycles"], s["hbm_bytes"]) for s in steps],
          "symbolic and plain compiles: the same cycles and bytes every step")
    # --explain-recompiles: the guard that failed, on stderr.
    pe = lpu_run(lpu, "generate", "tiny-opt", "--prompt-len", "3", "--gen-len", "12", "--explain-recompiles")
    check(pe.returncode == 0 and "[recompiles] step " in pe.stderr and "guard failed: context " in pe.stderr,
          "--explain-recompiles says which guard failed")
    check(len(rows) == G, "CSV: one row per step")
    check(all(int(r["cycles"]) == s["cycles"] and int(r["hbm_bytes"]) == s["hbm_bytes"] and int(r["position"]) == s["position"]
              and r["program"] == s["program"] for r, s in zip(rows, steps)), "CSV rows agree with the JSON steps")
    check("generate: %d/%d steps done" % (G, G) in p.stdout and "\x1b" not in p.stdout,
          "off a terminal: plain progress lines, no escape codes")
    check("time to first token" in p.stdout and "per-token latency p99" in p.stdout, "summary names the metrics")

    # Determinism: a second run is the same JSON but for the wall times.
    _, j2, rows2 = generate(check, lpu, work, "b", "tiny-opt", "--prompt-len", str(P), "--gen-len", str(G))
    check(without_wall(j) == without_wall(j2), "two runs: identical JSON except 'wall'")
    check(rows == rows2, "two runs: identical CSV")

    # The prefill and the first decode step are `lpu run` of that step: same cycles, same bytes.
    for s in steps[:2]:
        out = os.path.join(work, "run%d.json" % s["step"])
        r = lpu_run(lpu, "run", step_yaml(work, "tiny-opt", s, j["workload"]["name"]), "--json", out)
        check(r.returncode == 0, "lpu run of step %d exits 0" % s["step"])
        with open(out) as f:
            run = json.load(f)
        check(run["cycles"] == s["cycles"], "step %d (%s): cycles %d == lpu run's %d" % (s["step"], s["phase"], s["cycles"], run["cycles"]))
        check(run["hbm_read_bytes"] + run["hbm_write_bytes"] == s["hbm_bytes"], "step %d: HBM bytes == lpu run's" % s["step"])
        check(run["energy"]["total_j"] == s["energy_j"], "step %d: energy == lpu run's" % s["step"])

    # `lpu report` reads the generate JSON: latency and bytes against position.
    rj = os.path.join(work, "report.json")
    r = lpu_run(lpu, "report", os.path.join(work, "a.json"), "-o", os.path.join(work, "report"), "--json", rj)
    if check(r.returncode == 0, "lpu report of a generate JSON exits 0"):
        with open(rj) as f:
            plots = {p["file"] for p in json.load(f)["plots"]}
        check({"generate_latency.png", "generate_hbm.png", "generate_energy.png"} <= plots,
              "report: latency, HBM and energy vs position plotted")
    # A page showing a generation and a run names both (it was titled after the run alone).
    r = lpu_run(lpu, "report", os.path.join(work, "a.json"), os.path.join(work, "run1.json"), "-o",
                os.path.join(work, "mixed"), "--json", rj)
    if check(r.returncode == 0, "lpu report of a generate JSON and a run JSON exits 0"):
        with open(rj) as f:
            title = json.load(f)["title"]
        check(title.startswith("LPU report: generation of ") and "; " in title and " on " in title,
              "mixed report title names the generation and the run: %r" % title)

    # Lengths from the workload file; a flag overrides the file.
    wl = os.path.join(work, "gen.yaml")
    with open(wl, "w") as f:
        f.write("model: tiny-llama\ndtype: f16\nprompt_len: 3\ngen_len: 2\n")
    _, jf, _ = generate(check, lpu, work, "f", wl)
    check((jf["prompt_len"], jf["gen_len"]) == (3, 2), "prompt_len/gen_len read from the workload file")
    _, jo, _ = generate(check, lpu, work, "o", wl, "--gen-len", "3")
    check(jo["gen_len"] == 3 and len(jo["steps"]) == 3, "--gen-len overrides the file")
    # gen_len 1: the prefill alone; no decode step, so no per-token latency.
    _, j1, _ = generate(check, lpu, work, "one", "tiny-opt", "--prompt-len", "4", "--gen-len", "1")
    check(len(j1["steps"]) == 1 and j1["per_token_latency_s"] is None, "gen_len 1: the prefill only, per-token null")


def test_every_model(lpu, workdir, check):
    """Every built-in LLM generates (2 tokens after a 4-token prompt) on lpu-asic, where all fit."""
    work = workdir
    models = ["opt-1.3b", "opt-6.7b", "opt-13b", "opt-30b", "opt-66b", "llama2-7b", "llama2-13b", "llama2-70b",
              "gpt2", "tiny-opt", "tiny-llama"]
    listed = lpu_run(lpu, "list", "workloads").stdout
    check(all(m in listed for m in models), "every model of the list is built in")
    for m in models:
        _, j, rows = generate(check, lpu, work, m, m, "--prompt-len", "4", "--gen-len", "2", "--arch", "lpu-asic")
        check(len(j["steps"]) == 2 and all(s["cycles"] > 0 for s in j["steps"]), "%s: 2 steps with cycles" % m)
    # HuggingFace decode steps against a static KV cache (graph files): the prompt goes through the
    # decode-step graph token by token, each decode step is `lpu run` of the graph.
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    for rel, arch in (("hf/hf_llama_decode_eager_ids_tiny.json", "lpu-small"),
                      ("hf/hf_llama_decode_sdpa_ids.json", "lpu-small"),
                      ("hf_large/hf_llama2_7b_decode_f16.json", "lpu-asic")):
        g = os.path.join(fixtures, rel)
        tag = os.path.basename(rel)[:-5]
        _, j, rows = generate(check, lpu, work, tag, g, "--prompt-len", "4", "--gen-len", "6", "--arch", arch)
        rj = os.path.join(work, tag + "-run.json")
        r = lpu_run(lpu, "run", g, "--arch", arch, "--json", rj)
        if not check(r.returncode == 0 and len(j["steps"]) == 6, "%s: lpu run and 6 generate steps" % tag):
            continue
        with open(rj) as f:
            run = json.load(f)
        st = j["steps"]
        check(st[1]["cycles"] == run["cycles"] and st[1]["hbm_read_bytes"] == run["hbm_read_bytes"],
              "%s: the first decode step equals lpu run of the graph (%d cycles)" % (tag, run["cycles"]))
        check(st[0]["cycles"] == 4 * run["cycles"] and st[0]["graph_calls"] == 4,
              "%s: the prefill is the graph once per prompt token" % tag)
        check(all(s["cycles"] == run["cycles"] for s in st[1:]) and j["compile_cache"]["compiles"] == 1
              and j["compile_cache"]["simulations"] == 1, "%s: one static program, compiled and simulated once" % tag)
        check(j["static_kv_cache"]["max_cache_len"] in (32, 2048) and len(rows) == 6, "%s: static cache in the JSON" % tag)
    tiny = os.path.join(fixtures, "hf/hf_llama_decode_eager_ids_tiny.json")
    bad = lpu_run(lpu, "generate", tiny, "--prompt-len", "20", "--gen-len", "14")
    check(bad.returncode == 2 and "gen_len" in bad.stderr and "holds 32" in bad.stderr,
          "a generation beyond the graph's static cache: exit 2 naming gen_len and the 32 slots: %r" % bad.stderr.strip())
    notdec = lpu_run(lpu, "generate", os.path.join(fixtures, "hf/hf_llama_eager.json"))
    check(notdec.returncode == 2 and "static KV cache" in notdec.stderr and "buffer_writes" in notdec.stderr,
          "a graph that is no decode step: exit 2 saying what generate takes: %r" % notdec.stderr.strip())
