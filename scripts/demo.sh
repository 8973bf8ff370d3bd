#!/usr/bin/env bash
# The main job on the built-in defaults: compile the default workload with fusion off and
# on, simulate both on the default architecture, print them side by side, write JSON and an
# HTML report (plots, timelines) to out/.
set -euo pipefail
BUILD="${1:-build}"
cd "$(dirname "$0")/.."
OUT=out/demo
mkdir -p "$OUT"
"$BUILD/lpu" compare ln_gelu_add --arch lpu-small --fusion none,greedy --functional --json "$OUT/compare.json" \
  --report "$OUT/report"
"$BUILD/lpu" compile ln_gelu_add --fusion greedy --emit graph,core,loopir,schedule,asm -o "$OUT/greedy" >/dev/null
"$BUILD/lpu" compile ln_gelu_add --fusion none --emit schedule,asm -o "$OUT/none" >/dev/null
echo "IRs of both schedules: $OUT/greedy/ and $OUT/none/ (graph.txt, core.txt, loopir.txt, schedule.txt, program.s)"
echo "Report (open in a browser, works offline): $OUT/report/index.html"
