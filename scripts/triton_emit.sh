#!/usr/bin/env bash
# Emits everything scripts/triton_check.py needs into one directory, to carry to a GPU machine
# that has torch + triton but no lpu build:
#   OUT/<name>/{none,greedy}/triton_kernels.py   (lpu compile --emit triton,triton-plan)
#   OUT/<name>/torch_graph.py                    (lpu compile --emit torch: the core graph as eager torch
#                                                 calls, which triton_check.py also hands to torch.compile)
#   OUT/<name>/triton_data.{json,bin}            (inputs + reference outputs; checked workloads only)
#   OUT/<name>/source.json                       (the workload and lpu flags it was emitted from)
# usage: scripts/triton_emit.sh OUT [LPU]      (LPU defaults to build/lpu; run from the repo root)
# The model zoo (tests/frontend/models.py) is exported with Debian's PyTorch into OUT/_zoo first.
# Checked against the reference: the microbenchmarks, the tiny transformers, and the graphs
# exported from PyTorch 2.11 (tests/fixtures/torch-2.11, tests/fixtures/hf: PyTorch's outputs).
# Timed only (greedy compared with none, random inputs): GPT-2, OPT-1.3B and LLaMA-2-7B decode.
set -euo pipefail
out=${1:?usage: scripts/triton_emit.sh OUT [LPU]}
lpu=${2:-build/lpu}
mkdir -p "$out"

emit() {  # NAME WORKLOAD DATA(yes/no) [lpu flags...]
  local name=$1 w=$2 data=$3
  shift 3
  for f in none greedy; do
    "$lpu" compile "$w" --fusion "$f" --emit triton,triton-plan -o "$out/$name/$f" "$@" > /dev/null
  done
  local extra=torch
  if [ "$data" = yes ]; then extra=torch,triton-data; fi
  "$lpu" compile "$w" --fusion none --emit "$extra" -o "$out/$name" "$@" > /dev/null
  # What scripts/triton_table.py needs to ask the simulator about the same schedules.
  printf '{"workload": "%s", "lpu_flags": "%s"}\n' "$w" "$*" > "$out/$name/source.json"
  echo "emitted $name"
}

for w in ln_gelu_add softmax rms_norm gemv attention_decode tiny-opt-decode tiny-llama-decode-32; do
  emit "$w" "workloads/$w.yaml" yes
done
emit tiny-opt-prefill tiny-opt yes
emit tiny-llama-prefill tiny-llama yes
for g in tests/fixtures/torch-2.11/*.json tests/fixtures/torch-2.11/ops/*.json tests/fixtures/torch-2.11/dynamo-break/*.json; do
  n=$(basename "$(dirname "$g")")_$(basename "$g" .json)
  emit "t211_${n#torch-2.11_}" "$g" yes
done
while read -r stem; do
  case "$stem" in '#'* | '') continue ;; esac
  emit "$stem" "tests/fixtures/hf/$stem.json" yes
done < tests/fixtures/hf/fixtures.txt
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 tests/frontend/export_models.py "$out/_zoo" > /dev/null
for g in "$out"/_zoo/*.json; do
  case "$g" in *export_log.json) continue ;; esac
  emit "zoo_$(basename "$g" .json)" "$g" yes
done
# OUT/_zoo stays: the graphs the zoo_* entries came from (triton_table.py simulates them)
for w in gpt2-decode opt-1.3b-decode llama2-7b-decode; do
  emit "$w" "workloads/$w.yaml" no --arch lpu-asic
done
du -sh "$out"
