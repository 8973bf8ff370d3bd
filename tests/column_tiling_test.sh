#!/usr/bin/env bash
# Column tiling in the program text: gpt2-decode with 128 KiB of local memory, where one row of
# the LM head (50257 fp32 columns, 201 kB) does not fit. Its kernel must be 4 column tiles
# (12576 columns each, the last 12529: the widest double-buffered tile, balanced, rounded to 32
# columns) that together cover the vocabulary and stream the 768 x 50257 fp16 weights once.
# Usage: column_tiling_test.sh LPU_BINARY
set -euo pipefail
lpu=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$lpu" compile workloads/gpt2-decode.yaml --set lmu.capacity_kib=128 --emit asm -o "$out" > /dev/null
# The kernel holding lm_head: .kernel ID NAME, then its instructions up to the next .kernel.
read -r tiles cols bytes < <(awk '
  /^\.kernel/ { k = $3 }
  k ~ /lm_head|final_norm_norm/ && $1 == "sxe.gemm" {
    split($0, a, /[][]/); split(a[2], d, /, /)   # [M, K, N]
    n++; cols += d[3]; bytes += d[2] * d[3] * 2
  }
  END { print n + 0, cols + 0, bytes + 0 }' "$out/program.s")
echo "lm_head: $tiles column tiles, $cols columns, $bytes weight bytes"
[[ $tiles == 4 ]] || { echo "FAIL: expected 4 column tiles of the LM head, got $tiles"; exit 1; }
[[ $cols == 50257 ]] || { echo "FAIL: the column tiles cover $cols columns, not 50257"; exit 1; }
[[ $bytes == $((768 * 50257 * 2)) ]] || { echo "FAIL: weights streamed $bytes bytes, not once"; exit 1; }
grep -q 'sxe.gemm f16 \[1, 768, 12576\]' "$out/program.s" || { echo "FAIL: no 12576-column tile"; exit 1; }
grep -q 'sxe.gemm f16 \[1, 768, 12529\]' "$out/program.s" || { echo "FAIL: no last tile of 12529 columns"; exit 1; }
echo "column tiling: ok"
