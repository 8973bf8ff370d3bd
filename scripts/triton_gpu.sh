#!/usr/bin/env bash
# The GPU run behind docs/handlers.md's table, on a machine with torch + triton (no lpu build):
# first every workload of ROOT once in JOBS parallel processes, untimed (fills Triton's and
# Inductor's on-disk caches: compiling is CPU work and parallel), then one serial, timed
# triton_check.py run over all of them (kernels come from the caches; the timing sees one process).
# usage: scripts/triton_gpu.sh ROOT OUT.jsonl [JOBS] [triton_check.py flags...]
set -euo pipefail
root=${1:?usage: scripts/triton_gpu.sh ROOT OUT.jsonl [JOBS] [flags...]}
out=${2:?usage: scripts/triton_gpu.sh ROOT OUT.jsonl [JOBS] [flags...]}
jobs=${3:-6}
shift $(($# < 3 ? $# : 3))
here=$(dirname "$0")
# triton_check.py's loaders live in the lpu_workbench package (python/; docs/python.md).
export PYTHONPATH="$here/../python${PYTHONPATH:+:$PYTHONPATH}"
mapfile -t names < <(find "$root" -mindepth 1 -maxdepth 1 -type d -not -name '_*' -printf '%f\n' | sort)
t0=$(date +%s)
for ((j = 0; j < jobs; j++)); do
  part=()
  for ((i = j; i < ${#names[@]}; i += jobs)); do part+=("${names[i]}"); done
  [ ${#part[@]} -eq 0 ] && continue
  only=$(IFS=,; echo "${part[*]}")
  python3 "$here/triton_check.py" "$root" --only "$only" --timer events --iters 1 --warmup 0 --no-count-kernels "$@" \
    > "$out.warm$j.log" 2>&1 &
done
wait || true  # failures show again in the timed run
echo "caches warm after $(($(date +%s) - t0)) s"
python3 "$here/triton_check.py" "$root" --out "$out" "$@"
echo "timed run done after $(($(date +%s) - t0)) s"
