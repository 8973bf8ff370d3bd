#!/usr/bin/env bash
# Benchmark (not a test): the 1000-point OPT-1.3B decode sweep (configs/sweeps/opt13b_decode_1000.yaml)
# with the local backend at -j 2 and as a Slurm job array on 2 CPUs. Prints wall time,
# overhead per point and parallel efficiency against a serial sample (100 points at -j 1).
# The machine should be otherwise idle: efficiency compares wall times.
#   scripts/bench-sweep.sh [BUILD_DIR] [OUT_DIR] [local|slurm|all]
# Slurm: uses $SLURM_CONF's cluster if set, else starts scripts/slurm-local.sh (root) and
# stops it afterwards. ARRAY_SIZE (default 2) sets the number of array tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
OUT=$(mkdir -p "${2:-out/bench-sweep}" && cd "${2:-out/bench-sweep}" && pwd)
MODE=${3:-all}
SWEEP=configs/sweeps/opt13b_decode_1000.yaml
LPU="$BUILD/lpu"
JOBS=2
ARRAY_SIZE=${ARRAY_SIZE:-2}

# Wall and CPU seconds (user + sys of the command and all its children) of a command.
timed() { /usr/bin/time -f "%e %U %S" -o "$OUT/time.txt" "$@" >/dev/null || true; read -r WALL U S < "$OUT/time.txt"; CPU=$(python3 -c "print($U + $S)"); }

# Serial cost of a point: shard 0 of 10 (100 points, a hash-spread sample of every axis and
# policy) run one at a time. (A round-robin sample of 20 once held only `none` points and
# understated the serial cost by half.)
rm -rf "$OUT/serial"
timed "$LPU" sweep "$SWEEP" --shard 0/10 -j 1 -o "$OUT/serial"
SERIAL_WALL=$(python3 -c "print($WALL / 100)")
SERIAL_CPU=$(python3 -c "print($CPU / 100)")
printf 'serial: %.3f s wall, %.3f s CPU per point (100 points, -j 1)\n' "$SERIAL_WALL" "$SERIAL_CPU"

report() {  # name cpus wall cpu|-
  /usr/bin/python3 - "$1" "$2" "$3" "$4" "$SERIAL_WALL" "$SERIAL_CPU" "$OUT/$1/results.jsonl" <<'EOF2'
import json, sys
name, cpus, wall, cpu, s_wall, s_cpu, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], \
    float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
rows = [json.loads(l) for l in open(path)]
n, ok = len(rows), sum(r["status"] == "ok" for r in rows)
line = ("%-6s %d points (%d ok) on %d CPUs: wall %.1f s; parallel efficiency %.2f (serial wall x points / (CPUs x wall)); "
        "wall overhead per point %.3f s (CPUs x wall / points - serial wall)" %
        (name, n, ok, cpus, wall, n * s_wall / (cpus * wall), cpus * wall / n - s_wall))
if cpu != "-":
    line += "; CPU overhead per point %.3f s (sweep CPU / points - serial CPU)" % (float(cpu) / n - s_cpu)
print(line)
EOF2
}

if [ "$MODE" = local ] || [ "$MODE" = all ]; then
  rm -rf "$OUT/local"
  timed "$LPU" sweep "$SWEEP" -j $JOBS -o "$OUT/local"
  report local $JOBS "$WALL" "$CPU"
fi

if [ "$MODE" = slurm ] || [ "$MODE" = all ]; then
  if [ -z "${SLURM_CONF:-}" ]; then
    eval "$(scripts/slurm-local.sh start "$OUT/slurm-local")"
    trap 'scripts/slurm-local.sh stop "$OUT/slurm-local"' EXIT
  fi
  cpus=$(sinfo -h -o %C | awk -F/ '{print $4}')
  rm -rf "$OUT/slurm"
  timed "$LPU" sweep "$SWEEP" --backend slurm --array-size "$ARRAY_SIZE" -o "$OUT/slurm"
  report slurm "$cpus" "$WALL" -   # the tasks' CPU is not ours to measure (no accounting here)
fi
