#!/usr/bin/env bash
# Runs every libFuzzer parser target (fuzz/) for SECONDS each, from its committed seed corpus
# (fuzz/corpus/<target>/) plus what earlier runs found (BUILD/fuzz-corpus/<target>/, not
# committed). Prints executions per target; exits non-zero on any crash, leak or timeout.
#   scripts/fuzz.sh BUILD SECONDS [TARGET...]   CI: bash .ci/run uses 20 s; as a benchmark: 600 or more
# FUZZ_RUNS=N stops each target after N executions instead (SECONDS still caps it), e.g.
#   FUZZ_RUNS=1000000 scripts/fuzz.sh build-asan 3600 fuzz_sweep_yaml
# The mutation sequence starts from a fixed seed (FUZZ_SEED, default 1), so a CI run explores
# the same inputs first every time: a finding there is reproducible, not luck of the clock.
set -euo pipefail
BUILD="${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}"
SECONDS_EACH="${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}"
cd "$(dirname "$0")/.."
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_graph_json fuzz_graph_text fuzz_loopir_text fuzz_asm fuzz_binary fuzz_arch_yaml
                                    fuzz_workload_yaml fuzz_sweep_yaml fuzz_serve_trace fuzz_gpu_yaml)
runs=()
[ -z "${FUZZ_RUNS:-}" ] || runs=(-runs="$FUZZ_RUNS")
# One target: its report line into BUILD/fuzz-TARGET.result, its status as the exit code.
fuzz_one() {
  local t=$1 work="$BUILD/fuzz-corpus/$1" log="$BUILD/fuzz-$1.log" out="$BUILD/fuzz-$1.result" secs
  mkdir -p "$work" "$BUILD/fuzz-crashes"
  # -timeout: one input over 10 s is a hang; -rss_limit_mb bounds memory; leaks are on (ASan).
  if "$BUILD/fuzz/$t" "$work" "fuzz/corpus/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
       -max_len=65536 -seed="${FUZZ_SEED:-1}" -artifact_prefix="$BUILD/fuzz-crashes/$t-" -print_final_stats=1 "${runs[@]}" >"$log" 2>&1; then
    secs=$(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "$SECONDS_EACH")
    echo "fuzz $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') executions in $secs s, no finding" >"$out"
  else
    { echo "fuzz $t: FINDING (see $log and $BUILD/fuzz-crashes/)"; tail -30 "$log"; } >"$out"
    return 1
  fi
}
# The targets run FUZZ_JOBS at a time (default: one per core; each fuzzer is one process), so
# CI's budget of SECONDS per target takes SECONDS x targets / cores of wall time. The reports
# are printed in the targets' order.
jobs_max="${FUZZ_JOBS:-$(nproc)}"
[[ "$jobs_max" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "fuzz.sh: FUZZ_JOBS=$jobs_max: expected a whole number of jobs from 1 to 9999" >&2; exit 2; }
status=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
for t in "${targets[@]}"; do cat "$BUILD/fuzz-$t.result" 2>/dev/null || { echo "fuzz $t: no report"; status=1; }; done
exit $status
