#!/bin/sh
# The serving figures of docs/serving.md ("Results"), from `lpu serve` on lpu-asic:
#   scripts/bench_serve.sh capacity   LLaMA-2-7B and OPT-1.3B, 1 device and TP 2, chunked prefill on
#                                     and off: the highest rate with p99 TTFT <= 1 s and p99 TPOT <= 50 ms
#   scripts/bench_serve.sh capacity-gpu  the same search with an H200 prefill pool (GPU prefill + LPU decode)
#   (MODELS, TPS and CHUNKS narrow the capacity runs, e.g. MODELS=llama2-7b TPS=2 CHUNKS=off)
#   scripts/bench_serve.sh speed      the acceptance run: LLaMA-2-7B, 1000 requests at 0.1 req/s, cold and
#                                     again from the memo: wall against simulated time
#   scripts/bench_serve.sh disagg     GPU prefill (H200) + LPU decode against LPU-only at the same rate
#   scripts/bench_serve.sh table      the tables of what ran (markdown), from out/bench-serve/*.json
# Step-cost points are memoised in out/bench-serve/points-*.json: a second run reuses them (the
# JSON's wall.points_loaded says so). Run from the repository root after building build/lpu.
set -eu
OUT=${OUT:-out/bench-serve}
REQS=${REQS:-200}
mkdir -p "$OUT"
LENS="--prompt uniform:16:512 --output uniform:16:256 --chunk-size 128"
capacity() {
  for model in ${MODELS:-opt-1.3b llama2-7b}; do
    for tp in ${TPS:-1 2}; do
      for chunk in ${CHUNKS:-on off}; do
        flag=""; [ "$chunk" = off ] && flag="--no-chunked-prefill"
        name="cap-$model-tp$tp-chunk-$chunk"
        echo "== $name"
        ${LPU:-build/lpu} serve "$model" --arch lpu-asic --tp "$tp" --requests "$REQS" --seed 1 $LENS $flag --find-rate \
          --cost-cache "$OUT/points-$model-tp$tp.json" --json "$OUT/$name.json" --json-wall | tail -4 || true
      done
    done
  done
}
capacity_gpu() {  # the same search with an H200 prefill pool in front of one LPU decode replica
  for model in ${MODELS:-opt-1.3b llama2-7b}; do
    name="cap-$model-tp1-gpu-prefill"
    echo "== $name"
    ${LPU:-build/lpu} serve "$model" --arch lpu-asic --requests "$REQS" --seed 1 $LENS --find-rate \
      --prefill-replicas 1 --prefill-gpu h200 --cost-cache "$OUT/points-$model-tp1.json" --json "$OUT/$name.json" \
      --json-wall | tail -4 || true
  done
}
speed() {
  for run in cold warm; do
    [ "$run" = cold ] && rm -f "$OUT/points-llama2-7b-tp1-chat.json"
    ${LPU:-build/lpu} serve llama2-7b --arch lpu-asic --rate "${RATE:-0.1}" --requests 1000 --seed 1 \
      --cost-cache "$OUT/points-llama2-7b-tp1-chat.json" --json "$OUT/speed-llama2-7b-$run.json" --json-wall | tail -3
  done
}
disagg() {
  for model in llama2-7b opt-1.3b; do
    rate=0.1; [ "$model" = opt-1.3b ] && rate=0.5
    for mode in lpu gpu; do
      flag=""; [ "$mode" = gpu ] && flag="--prefill-replicas 1 --prefill-gpu h200"
      echo "== disagg-$model-$mode (rate $rate)"
      ${LPU:-build/lpu} serve "$model" --arch lpu-asic --rate "$rate" --requests 300 --seed 1 $flag \
        --cost-cache "$OUT/points-$model-tp1-chat.json" --json "$OUT/disagg-$model-$mode.json" --json-wall | tail -7
    done
  done
}
table() {
  /usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
print("| run | max rate (req/s) | TTFT p99 (s) | TPOT p99 (ms) | step_cost_error max | simulated / wall |")
print("|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    if os.path.basename(f).startswith("points-"):
        continue
    j = json.load(open(f))
    s, cap, w = j["summary"], j.get("capacity", {}), j["wall"]
    rate = f"{cap['max_rate']:.3f}" if cap.get("found") else ("none" if cap else "-")
    err = j.get("step_cost_error", {}).get("max")
    errs = "-" if err is None else "%.2f%%" % (err * 100)
    print("| %s | %s | %.3f | %.1f | %s | %.1fx (%.0f s wall) |" % (os.path.basename(f)[:-5], rate, s["ttft_s"]["p99"],
          s["tpot_s"]["p99"] * 1e3, errs, w["simulated_s_per_wall_s"], w["total_s"]))
PY
}
case ${1:-table} in
  capacity) capacity; table ;;
  capacity-gpu) capacity_gpu; table ;;
  speed) speed ;;
  disagg) disagg ;;
  table) table ;;
  *) echo "usage: $0 capacity|capacity-gpu|speed|disagg|table" >&2; exit 2 ;;
esac
