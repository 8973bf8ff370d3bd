#!/usr/bin/env bash
# Emits everything scripts/triton_check.py needs into one directory, to carry to a GPU machine
# that has torch + triton but no lpu build:
#   OUT/<name>/{none,greedy}/triton_kernels.py   (lpu compile --emit triton,triton-plan)
#   OUT/<name>/triton_data.{json,bin}            (inputs + reference outputs; checked workloads only)
# usage: scripts/triton_emit.sh OUT [LPU]      (LPU defaults to build/lpu; run from the repo root)
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
  if [ "$data" = yes ]; then "$lpu" compile "$w" --fusion none --emit triton-data -o "$out/$name" "$@" > /dev/null; fi
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
for w in gpt2-decode opt-1.3b-decode llama2-7b-decode; do
  emit "$w" "workloads/$w.yaml" no --arch lpu-asic
done
du -sh "$out"
