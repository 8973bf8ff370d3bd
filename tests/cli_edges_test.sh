#!/usr/bin/env bash
# CLI edges of issue 13, one step beyond docs/cli.md: names `lpu list workloads` lists, the
# effective arch after --set, units and LLM figures, duplicate policies, help that helps.
# Usage: cli_edges_test.sh path/to/lpu path/to/lpu-bench
set -u
LPU="$1"
BENCH="$2"
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
lacks() {  # lacks NAME PATTERN -- command...: the output must not match
  local name="$1" pattern="$2"
  shift 3
  if "$@" 2>&1 | grep -qE -- "$pattern"; then echo "FAIL $name: output has /$pattern/"; fail=$((fail + 1)); return; fi
  echo "ok   $name"; pass=$((pass + 1))
}

# A model name from `lpu list workloads` runs (an LLM: one decode step, with per-token figures).
check model_name_runs 0 "time per token" -- "$LPU" run gpt2 --arch lpu-asic
check model_name_tokens_per_s 0 "tokens per second" -- "$LPU" run gpt2 --arch lpu-asic
# Too big for one device: advice that works (tensor parallelism over enough devices, which run).
check too_big_says_why 2 "it would need 4 devices: split it with --set devices=4" -- "$LPU" run llama2-7b
check too_big_advice_runs 0 "devices +4 \(tensor parallelism\)" -- "$LPU" run llama2-7b --set devices=4
# Issue 14's acceptance command: OPT-66B fp16 split over two ASIC devices (a few seconds).
check opt66b_on_two_devices 0 "devices +2 \(tensor parallelism\)" -- "$LPU" run workloads/opt-66b-decode.yaml --arch configs/lpu-asic.yaml --set devices=2
check tp_not_dividing 2 "heads \(32\) to be a multiple of 3" -- "$LPU" run llama2-7b --tp 3
# The arch as run, overrides included.
check effective_arch 0 "lpu-small \(overridden: hbm.bandwidth_gbps=128\)" -- "$LPU" run ln_gelu_add --set hbm.bandwidth_gbps=128
# Units: bytes with their unit, and utilisation saying what it counts.
check run_units 0 "HBM read +[0-9.]+ kB" -- "$LPU" run ln_gelu_add
check run_util_units 0 "vxe utilisation +[0-9.]+ % of peak element ops \(busy [0-9.]+ %\)" -- "$LPU" run ln_gelu_add
check compare_units 0 "greedy +1 +532.5 kB +524.3 kB +1.06 MB" -- "$LPU" compare ln_gelu_add
check compare_why 0 "-12.59 MB HBM, -14 kernels" -- "$LPU" compare ln_gelu_add
check compare_functional_rule 0 "functional check: tolerance \|sim-ref\| <= 0.0001 \+ 0.0001\*\|ref\|" -- "$LPU" compare ln_gelu_add --functional
check compare_llm 0 "ms/token +tokens/s" -- "$LPU" compare gpt2-decode --arch lpu-asic
# A policy named twice is a mistake, not two runs.
check compare_duplicate 2 "policy 'none' given twice" -- "$LPU" compare ln_gelu_add --fusion none,greedy,none
# The prefill workload file runs on the default config (its LM head row runs single-buffered).
check prefill_default_config 0 "cycles" -- "$LPU" run workloads/opt-1.3b-prefill.yaml
# Help that helps, and runs nothing.
check bench_help 0 "usage: lpu-bench" -- timeout 10 "$BENCH" --help
check bench_bad_arg 2 "unexpected argument" -- timeout 10 "$BENCH" --frobnicate
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  here="$(cd "$(dirname "$0")" && pwd)"
  check export_help 0 "Exports the model zoo" -- bash -c "cd '$TMP' && PYTHONPATH='$here/../python' /usr/bin/python3 '$here/frontend/export_models.py' --help"
  check export_help_no_dir 1 "" -- test -e "$TMP/--help"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
