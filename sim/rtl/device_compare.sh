#!/usr/bin/env bash
# The "approx vs rtl in the device" table of docs/rtl.md ("RTL inside the device model"): the gemv
# workload run end to end by `lpu run` with sxe.model=approx and sxe.model=rtl, whole-program
# cycles, the RTL tree's stall cycles and the wall time of each run.
# Usage: sim/rtl/device_compare.sh [path/to/lpu]   (default build/lpu; needs LPU_WITH_RTL)
set -euo pipefail
lpu=${1:-build/lpu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-11s %5s %6s %10s %10s %7s %10s %9s %9s\n' "K x N" depth "GB/s" approx_cyc rtl_cyc "err%" rtl_stall apx_wall rtl_wall
run() {  # k n depth bw
  printf 'model: gemv\nk: %s\nn: %s\ndtype: f16\n' "$1" "$2" > "$tmp/w.yaml"
  for m in approx rtl; do
    local t0 t1
    t0=$(date +%s.%N)
    "$lpu" run "$tmp/w.yaml" --set sxe.model=$m --set sxe.pipeline_depth="$3" --set hbm.bandwidth_gbps="$4" \
      --json "$tmp/$m.json" > /dev/null
    t1=$(date +%s.%N)
    echo "$t0 $t1" > "$tmp/$m.time"
  done
  python3 - "$tmp" "$1x$2" "$3" "$4" <<'PY'
import json, sys
d, shape, depth, bw = sys.argv[1:]
a, r = (json.load(open(f"{d}/{m}.json")) for m in ("approx", "rtl"))
wall = {m: (lambda t: float(t[1]) - float(t[0]))(open(f"{d}/{m}.time").read().split()) for m in ("approx", "rtl")}
err = 100.0 * (a["cycles"] - r["cycles"]) / r["cycles"]
print(f"{shape:<11} {depth:>5} {bw:>6} {a['cycles']:>10} {r['cycles']:>10} {err:>+7.2f} "
      f"{r['sxe_rtl']['stall_cycles']:>10} {wall['approx']:>8.2f}s {wall['rtl']:>8.2f}s")
PY
}
for depth in 4 8 10 12; do
  for shape in "256 256" "1000 100" "768 768" "2048 512" "4096 4096"; do
    run $shape $depth 4096
  done
  run 768 768 $depth 16
  run 4096 4096 $depth 256
done
