#!/usr/bin/env bash
# The CLI contract, as a user meets it: help, exit codes, and error messages that name the
# file, the line and the key. Usage: cli_test.sh path/to/lpu
set -u
LPU="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
check() {  # check NAME EXPECTED_EXIT PATTERN -- command...
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; fail=$((fail + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/"; echo "$out" | head -20; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

check help 0 "compare" -- "$LPU" --help
check help_lists_all 0 "check-config" -- "$LPU" --help
check no_subcommand 2 "" -- "$LPU"
check list_ops 0 "layer_norm" -- "$LPU" list ops
check list_workloads 0 "ln_gelu_add" -- "$LPU" list workloads
check list_configs 0 "lpu-small" -- "$LPU" list configs
check check_config_ok 0 ": ok" -- "$LPU" check-config configs/lpu-small.yaml
check check_config_energy 0 "energy: HBM 3.9/3.9 pJ/bit read/written" -- "$LPU" check-config configs/lpu-small.yaml
check check_config_energy_set 0 "energy: HBM 1.95/3.9 pJ/bit" -- "$LPU" check-config configs/lpu-small.yaml --set energy.hbm_read_pj_per_bit=1.95
check energy_nan 2 "energy.sxe_pj_per_mac: must be a finite number" -- "$LPU" run ln_gelu_add --set energy.sxe_pj_per_mac=.nan

sed 's/  channels: 8/  chanels: 8/' configs/lpu-small.yaml > "$TMP/typo.yaml"
check misspelled_key 2 "typo.yaml:[0-9]+: hbm.chanels: unknown key" -- "$LPU" check-config "$TMP/typo.yaml"
sed 's/bandwidth_gbps: 256/bandwidth_gbps: -256/' configs/lpu-small.yaml > "$TMP/neg.yaml"
check negative_bandwidth 2 "neg.yaml:[0-9]+: hbm.bandwidth_gbps: value -256 out of range" -- "$LPU" check-config "$TMP/neg.yaml"
check set_override_bad 2 "out of range" -- "$LPU" run ln_gelu_add --set lmu.capacity_kib=0
check unknown_workload 2 "no such file" -- "$LPU" run does_not_exist
check unknown_policy 2 "unknown fusion policy" -- "$LPU" run ln_gelu_add --fusion magic
printf 'model: ln_gelu_add\nd_modle: 64\n' > "$TMP/w.yaml"
check workload_typo 2 "w.yaml:2: d_modle: unknown key" -- "$LPU" run "$TMP/w.yaml"
check lmu_too_small 2 "cannot be tiled in columns" -- "$LPU" run ln_gelu_add --set lmu.capacity_kib=4

check run_functional 0 "PASS" -- "$LPU" run ln_gelu_add --functional --json "$TMP/run.json" --trace "$TMP/trace.json"
check run_json 0 "compulsory_hbm_bytes" -- cat "$TMP/run.json"
check run_json_energy 0 '"j_per_token"|"static_j"' -- cat "$TMP/run.json"
check run_energy_table 0 "energy by engine" -- "$LPU" run ln_gelu_add
check trace_json 0 "traceEvents" -- cat "$TMP/trace.json"
check compare 0 "greedy" -- "$LPU" compare ln_gelu_add --fusion none,greedy --json "$TMP/cmp.json"
check compile_emit 0 "program.s" -- "$LPU" compile ln_gelu_add --emit graph,core,loopir,schedule,asm -o "$TMP/ir"
check compile_files 0 "" -- test -s "$TMP/ir/loopir.txt"
check compile_handlers 0 "program.lpubin" -- "$LPU" compile ln_gelu_add --fusion none --emit cpp,counts,counts_json,bin -o "$TMP/h"
check counts_table 0 "k14_residual .* 1,048,576 " -- cat "$TMP/h/counts.txt"
check counts_json 0 "hbm_read_bytes" -- cat "$TMP/h/counts.json"
check cpp_source 0 'extern "C" void lpu_run' -- cat "$TMP/h/kernels.cpp"
check bin_magic 0 "^LPUB" -- head -c 4 "$TMP/h/program.lpubin"
check bin_needs_out 2 "give -o DIR" -- "$LPU" compile ln_gelu_add --emit bin
check emit_unknown 2 "unknown artefact 'bogus'" -- "$LPU" compile ln_gelu_add --emit bogus

check help_sweep 0 "--resume" -- "$LPU" sweep --help
check help_report 0 "--cost" -- "$LPU" report --help
check help_compare_report 0 "--report" -- "$LPU" compare --help
check sweep_no_file 2 "nope.yaml: cannot open" -- "$LPU" sweep "$TMP/nope.yaml" -o "$TMP/sw"
printf 'workloads: [ln_gelu_add]\nfusion: [none]\naxes:\n  hbm.bandwith_gbps: [128]\n' > "$TMP/s.yaml"
check sweep_axis_typo 2 "s.yaml:4: axes.hbm.bandwith_gbps: .*unknown key \(did you mean 'bandwidth_gbps'" -- "$LPU" sweep "$TMP/s.yaml" -o "$TMP/sw"
printf 'workloads: [ln_gelu_add]\nfusion: [none]\naxes:\n  lmu.capacity_kib: {start: 64, stop: 0, step: 64}\n' > "$TMP/r.yaml"
check sweep_bad_range 2 "r.yaml:4: axes.lmu.capacity_kib.step: step 64 never gets from 64 to 0" -- "$LPU" sweep "$TMP/r.yaml" -o "$TMP/sw"
# A relative output path whose directories do not exist yet, as in docs/cli.md's commands in a
# fresh checkout (`-o out/sweeps/hbm_lmu` was refused: "out is not a directory").
mkdir -p "$TMP/fresh"
check relative_new_dirs 0 "" -- bash -c "cd '$TMP/fresh' && '$(realpath "$LPU")' run ln_gelu_add --json out/a/run.json && test -s out/a/run.json"
check sweep_bad_jobs 2 "-j: expected >= 1, got 0" -- "$LPU" sweep configs/sweeps/hbm_linear.yaml -j 0 -o "$TMP/sw0"
check report_no_input 2 "no such file" -- "$LPU" report "$TMP/none.json" -o "$TMP/rep"

# Graph files (docs/graph-format.md): a hand-made JSON graph, and malformed variants that must
# give one line naming the node, and exit 2.
graph_json() {  # graph_json FILE Y_NODE [EXTRA_NODE]
  printf '{"format": "lpu-graph", "version": 1, "name": "hand", "nodes": [\n' > "$1"
  printf '  {"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4, 8]},\n' >> "$1"
  printf '  {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [8]},\n' >> "$1"
  [ -n "${3:-}" ] && printf '  %s,\n' "$3" >> "$1"
  printf '  %s\n], "outputs": ["y"]}\n' "$2" >> "$1"
}
one_line() {  # exit 2 with exactly one line of output naming the node
  local name="$1" pattern="$2"
  shift 2
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc, expected 2 and one line matching /$pattern/:"; echo "$out" | head -5; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}
graph_json "$TMP/ok.json" '{"name": "y", "kind": "call", "op": "aten.native_layer_norm", "inputs": ["x", "w", "w"], "attrs": {"normalized_shape": [8], "eps": 1e-05, "result": 0}, "dtype": "f32", "shape": [4, 8]}'
check list_ops_aten 0 "aten.native_layer_norm" -- "$LPU" list ops
check graph_compile 0 "wrote" -- "$LPU" compile "$TMP/ok.json" --emit graph,core -o "$TMP/gir"
check graph_core_text 0 "= rsqrt\(" -- cat "$TMP/gir/core.txt"
check graph_run_timing_needs_no_sidecar 0 "cycles" -- "$LPU" run "$TMP/ok.json"
check graph_run_functional_needs_data 2 "no input data for %x|sidecar index has no input data for %x" -- "$LPU" run "$TMP/ok.json" --functional
check graph_missing 2 "no such file" -- "$LPU" run "$TMP/nope.json"
graph_json "$TMP/unknown_op.json" '{"name": "y", "kind": "call", "op": "aten.frobnicate", "inputs": ["x"], "dtype": "f32", "shape": [4, 8]}'
one_line graph_unknown_op "unknown_op.json: node %y: unknown op 'aten.frobnicate'.*--on-unsupported=break" "$LPU" run "$TMP/unknown_op.json"
check list_ops_core_aten 0 "160 of 160 ops handled" -- "$LPU" list ops --aten
check list_aten_needs_ops 2 "--aten goes with" -- "$LPU" list workloads --aten
graph_json "$TMP/shape.json" '{"name": "y", "kind": "call", "op": "add", "inputs": ["x", "w"], "dtype": "f32", "shape": [4, 9]}'
one_line graph_shape_mismatch "node %y \(add\): declared type f32\[4, 9\] but inputs give f32\[4, 8\]" "$LPU" compile "$TMP/shape.json" --emit core
graph_json "$TMP/dangling.json" '{"name": "y", "kind": "call", "op": "add", "inputs": ["x", "v"], "dtype": "f32", "shape": [4, 8]}'
one_line graph_dangling "node %y: input %v is not defined" "$LPU" run "$TMP/dangling.json"
graph_json "$TMP/cycle.json" '{"name": "y", "kind": "call", "op": "add", "inputs": ["x", "z"], "dtype": "f32", "shape": [4, 8]}' \
  '{"name": "z", "kind": "call", "op": "exp", "inputs": ["y"], "dtype": "f32", "shape": [4, 8]}'
one_line graph_cycle "node %[yz]: cycle %[yz] -> %[yz] -> %[yz]" "$LPU" ref "$TMP/cycle.json"
printf 'graph: ok.json\n' > "$TMP/g.yaml"
check graph_yaml 0 "wrote" -- "$LPU" compile "$TMP/g.yaml" --emit core -o "$TMP/gy"
printf 'graph: ok.json\nseq_len: 3\n' > "$TMP/g2.yaml"
check graph_yaml_extra_key 2 "g2.yaml:2: seq_len: unknown key" -- "$LPU" run "$TMP/g2.yaml"

printf '.program deadlock\n.kernel 0 k\nsync.wait 4\nhalt\n' > "$TMP/deadlock.s"
check deadlock_exit3 3 "device 0 isu waits for token 4" -- "$LPU" sim "$TMP/deadlock.s"
"$LPU" compile ln_gelu_add --emit asm -o "$TMP/prog" >/dev/null
check sim_program 0 "cycles" -- "$LPU" sim "$TMP/prog/program.s" --json "$TMP/sim.json"
# devices = N: lpu compile writes every device's program (tensor parallelism); lpu sim of them
# gives lpu run's figures, device by device.
check tp_compile_ranks 0 "program.dev1.lpubin" -- "$LPU" compile tiny-opt --set devices=2 --emit asm,bin -o "$TMP/tp"
check tp_compile_needs_dir 2 "one file per device: give -o DIR" -- "$LPU" compile tiny-opt --set devices=2 --emit asm
check tp_sim_ranks 0 "device cycles +[0-9]+ [0-9]+" -- "$LPU" sim "$TMP/tp/program.s" "$TMP/tp/program.dev1.lpubin" --set devices=2 --json "$TMP/tpsim.json"
"$LPU" run tiny-opt --set devices=2 --json "$TMP/tprun.json" >/dev/null
check tp_sim_equals_run 0 "" -- /usr/bin/python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["cycles"] > 0 and a["device_cycles"] == b["device_cycles"] and a["devices"] == b["devices"], (a["devices"], b["devices"])' \
  "$TMP/tpsim.json" "$TMP/tprun.json"
printf '.program bad\nvxe.add [1, 1] lm:0x0 <- #1.0\n' > "$TMP/bad.s"
check sim_bad_asm 2 "bad.s:2:" -- "$LPU" sim "$TMP/bad.s"

check vcd_run 0 "" -- "$LPU" run softmax --vcd "$TMP/run.vcd"
check vcd_file 0 "isu.*in_flight|in_flight" -- grep -E "var wire .* in_flight" "$TMP/run.vcd"

# Decoder keys and batching (docs/workloads.md): --set workload.KEY, a new model, roofs.
check workload_set_batch 0 "tokens/s roofs .* memory .* compute" -- "$LPU" run tiny-opt --set workload.batch=3
check workload_set_bad 2 "--set workload.batch=0: batch: value 0 out of range" -- "$LPU" run tiny-opt --set workload.batch=0
check workload_set_graph 2 "graph file carries its own shapes" -- "$LPU" run tests/fixtures/hf/hf_gpt2_eager.json --set workload.batch=2
check list_workload_keys 0 "llama2-70b .*decoder, 68.98B parameters: layers=80 d_model=8192 heads=64 kv_heads=8" -- "$LPU" list workloads
printf 'model: decoder\nlayers: 2\nd_model: 64\nheads: 4\nkv_heads: 3\nffn: 96\nvocab: 50\n' > "$TMP/dec.yaml"
check decoder_bad_kv_heads 2 "dec.yaml:5: kv_heads: heads 4 must be a multiple of kv_heads 3" -- "$LPU" run "$TMP/dec.yaml"
check decoder_example 0 "k0_l0.attn_norm" -- "$LPU" compile workloads/decoder-3b-example.yaml --emit counts --set workload.layers=1

# Serving (docs/serving.md): a run, its JSON byte-identical for a seed, --exact, GPU prefill.
check serve_run 0 "step costs: model from" -- "$LPU" serve tiny-llama --rate 40 --requests 100 --seed 3 --json "$TMP/s1.json" --csv "$TMP/s1.csv"
check serve_again 0 "" -- "$LPU" serve tiny-llama --rate 40 --requests 100 --seed 3 --json "$TMP/s2.json"
check serve_deterministic 0 "" -- cmp "$TMP/s1.json" "$TMP/s2.json"
check serve_json_kind 0 '"kind": "serve"' -- grep '"kind": "serve"' "$TMP/s1.json"
check serve_csv_rows 0 "^100$" -- bash -c "tail -n +2 '$TMP/s1.csv' | wc -l"
check serve_exact 0 "every step simulated \(--exact\); programs: [0-9]+ compiles" -- "$LPU" serve tiny-llama --rate 40 --requests 10 --exact
check serve_explain_recompiles 0 "\[recompiles\] step [0-9]+ \(1 sequence, 1 token\(s\) on [0-9]+ cached\): " -- "$LPU" serve opt-1.3b --set workload.layers=2 --arch lpu-asic --rate 40 --requests 4 --output fixed:20 --prompt fixed:30 --exact --explain-recompiles
check serve_gpu_prefill 0 "prefill on h200" -- "$LPU" serve tiny-llama --rate 40 --requests 20 --prefill-replicas 1 --prefill-gpu h200

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
