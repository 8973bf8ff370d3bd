#!/usr/bin/env bash
# Benchmark (not a test): the 1000-point OPT-1.3B decode sweep (configs/sweeps/opt13b_decode_1000.yaml)
# with the local backend at -j 2 and as a Slurm job array on 2 CPUs. Prints wall time,
# overhead per point and parallel efficiency against a serial sample (20 points at -j 1).
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

now() { date +%s.%N; }

# Serial cost of a point: shard 0 of 50 (20 points) run one at a time.
rm -rf "$OUT/serial"
t0=$(now)
"$LPU" sweep "$SWEEP" --shard 0/50 -j 1 -o "$OUT/serial" >/dev/null
t1=$(now)
serial=$(python3 -c "print(($t1 - $t0) / 20)")
printf 'serial: %.3f s per point (20 points, -j 1)\n' "$serial"

report() {  # name wall_s cpus
  /usr/bin/python3 - "$1" "$2" "$3" "$serial" "$OUT/$1/results.jsonl" <<'EOF'
import json, sys
name, wall, cpus, serial, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = [json.loads(l) for l in open(path)]
ok = sum(r["status"] == "ok" for r in rows)
ideal = len(rows) * serial / cpus
print("%-6s %4d points (%d ok) on %d CPUs: wall %.1f s, %.3f s per point; overhead per point vs serial %.3f s; "
      "parallel efficiency %.2f" % (name, len(rows), ok, cpus, wall, wall / len(rows),
                                     (wall * cpus - len(rows) * serial) / len(rows), ideal / wall))
EOF
}

if [ "$MODE" = local ] || [ "$MODE" = all ]; then
  rm -rf "$OUT/local"
  t0=$(now)
  "$LPU" sweep "$SWEEP" -j $JOBS -o "$OUT/local" >/dev/null
  t1=$(now)
  report local "$(python3 -c "print($t1 - $t0)")" $JOBS
fi

if [ "$MODE" = slurm ] || [ "$MODE" = all ]; then
  started=""
  if [ -z "${SLURM_CONF:-}" ]; then
    eval "$(scripts/slurm-local.sh start "$OUT/slurm-local")"
    started=1
    trap 'scripts/slurm-local.sh stop "$OUT/slurm-local"' EXIT
  fi
  cpus=$(sinfo -h -o %C | awk -F/ '{print $4}')
  rm -rf "$OUT/slurm"
  t0=$(now)
  "$LPU" sweep "$SWEEP" --backend slurm --array-size "$ARRAY_SIZE" -o "$OUT/slurm" >/dev/null
  t1=$(now)
  report slurm "$(python3 -c "print($t1 - $t0)")" "$cpus"
fi
