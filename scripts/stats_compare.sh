#!/usr/bin/env bash
# The refactoring check: the statistics JSON of every built-in workload, workload file, graph
# fixture and zoo graph, on every preset and both fusion policies, plus generations and tensor
# parallelism, must be byte-identical before and after a change that claims "behaviour
# unchanged" (DEVELOPERS' rule; docs/robustness.md).
#
#   scripts/stats_compare.sh snapshot BUILD DIR     write every statistics JSON into DIR
#   scripts/stats_compare.sh compare  BUILD BASE    snapshot into BASE.new and diff against BASE
#
# Take the baseline with the build of the commit before the change, then compare with the build
# after it. LPU_EXTRA_ARGS, if set, is added to every case's command line: e.g. a baseline with
# LPU_EXTRA_ARGS="--set sim.memoize=false" and a comparison without shows that layer
# memoisation changes no statistic. Wall-clock figures (keys naming wall time or seconds of host time) are dropped, since
# they are the one thing that may differ; everything else must match byte for byte. Zoo graphs are
# exported once into BASE/zoo-graphs (torch 1.13 here) and the same files are used by the
# comparison, so only the workbench is compared, not PyTorch. Runs two cases at a time.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '7,8p' "$0" >&2; exit 2; }
[ $# -eq 3 ] || usage
mode=$1 build=$(realpath "$2") dir=$3
lpu="$build/lpu"
[ -x "$lpu" ] || { echo "stats_compare: no $lpu (build first)" >&2; exit 2; }
case $mode in
  snapshot) out=$dir ;;
  compare) [ -d "$dir" ] || { echo "stats_compare: no baseline directory $dir" >&2; exit 2; }
           out=$dir.new; rm -rf "$out" ;;
  *) usage ;;
esac
mkdir -p "$out"
zoo=$( [ "$mode" = compare ] && echo "$dir/zoo-graphs" || echo "$out/zoo-graphs" )

# Zoo graphs: exported once with PyTorch (torch 1.13 on this machine).
if [ ! -d "$zoo" ]; then
  PYTHONPATH=$PWD/python /usr/bin/python3 tests/frontend/export_models.py "$zoo" >/dev/null
fi

# One case per line: "NAME<TAB>lpu arguments..." (NAME is the output file's stem).
cases=$(mktemp)
trap 'rm -f "$cases"' EXIT
presets="lpu-small lpu-asic lpu-fpga-u55c"
builtins=$("$lpu" list workloads | awk 'NR>2 && $2=="model" {print $1}')
for w in $builtins; do
  for a in $presets; do
    for f in none greedy; do printf 'run-%s-%s-%s\trun %s --arch %s --fusion %s\n' "$w" "$a" "$f" "$w" "$a" "$f"; done
  done
done >>"$cases"
for y in workloads/*.yaml; do
  s=$(basename "$y" .yaml)
  for f in none greedy; do
    printf 'file-%s-%s\trun %s --fusion %s\n' "$s" "$f" "$y" "$f"
    printf 'file-%s-asic-%s\trun %s --arch lpu-asic --fusion %s\n' "$s" "$f" "$y" "$f"
  done
done >>"$cases"
graphs=$(ls tests/fixtures/hf/*.json tests/fixtures/torch-2.11/*.json tests/fixtures/torch-2.11/ops/*.json \
  tests/fixtures/hf_large/*.json "$zoo"/*.json 2>/dev/null | grep -v -e export_log -e '\.sidecar' || true)
for g in $graphs; do
  grep -q '"nodes"' "$g" || continue
  s=$(echo "$g" | tr '/' '_' | sed 's/\.json$//; s/^.*fixtures_//; s/^.*zoo-graphs_/zoo_/')
  for f in none greedy; do printf 'graph-%s-%s\trun %s --fusion %s --arch lpu-asic\n' "$s" "$f" "$g" "$f"; done
done >>"$cases"
for f in none greedy; do
  printf 'functional-ln_gelu_add-%s\trun ln_gelu_add --functional --fusion %s\n' "$f" "$f"
  printf 'functional-tiny-llama-tp2-%s\trun tiny-llama-decode-32 --tp 2 --functional --fusion %s\n' "$f" "$f"
  printf 'tp-llama2-7b-2-%s\trun llama2-7b --arch lpu-asic --set devices=2 --fusion %s\n' "$f" "$f"
  printf 'tp-opt-66b-4-%s\trun opt-66b --arch lpu-asic --set devices=4 --fusion %s\n' "$f" "$f"
done >>"$cases"
printf 'compare-ln_gelu_add\tcompare ln_gelu_add --fusion none,greedy,search\n' >>"$cases"
printf 'generate-opt-1.3b-asic\tgenerate opt-1.3b --arch lpu-asic --prompt-len 16 --gen-len 48\n' >>"$cases"
printf 'generate-opt-1.3b-small\tgenerate opt-1.3b --prompt-len 8 --gen-len 24\n' >>"$cases"
printf 'generate-llama2-7b-tp2\tgenerate llama2-7b --arch lpu-asic --set devices=2 --prompt-len 8 --gen-len 8\n' >>"$cases"
printf 'generate-hf-llama-decode\tgenerate tests/fixtures/hf/hf_llama_decode_eager_ids_tiny.json --prompt-len 4 --gen-len 8\n' >>"$cases"

# Each case: run it, keep the exit code, stderr (errors; empty on success: progress goes to a
# terminal only) and the JSON with wall-clock keys removed.
run_case() {
  local name=$1; shift
  local raw="$out/$name.raw.json" rc=0
  # shellcheck disable=SC2086
  "$lpu" $* ${LPU_EXTRA_ARGS:-} --json "$raw" >"$out/$name.stdout" 2>"$out/$name.stderr" || rc=$?
  echo "$rc" >"$out/$name.rc"
  if [ -f "$raw" ]; then
    /usr/bin/python3 - "$raw" "$out/$name.json" "$zoo" <<'EOF'
import json, re, sys
WALL = re.compile(r'(^|_)(wall|host_s|compile_s|simulate_s|elapsed|seconds_wall)', re.I)
def wall(parent, key):  # the tuner's search time is its wall time
    return WALL.search(key) or (parent == "search" and key == "seconds")
def strip(v, parent=""):
    if isinstance(v, dict):
        return {k: strip(x, k) for k, x in v.items() if not wall(parent, k)}
    if isinstance(v, list):
        return [strip(x, parent) for x in v]
    if isinstance(v, str):  # the zoo graphs' directory differs between baseline and comparison
        return v.replace(sys.argv[3], "<zoo>")
    return v
with open(sys.argv[1]) as f:
    data = json.load(f)
with open(sys.argv[2], 'w') as f:
    json.dump(strip(data), f, indent=1, sort_keys=True)
EOF
    rm -f "$raw"
  fi
  sed -i "s|$zoo|<zoo>|g" "$out/$name.stderr"
  rm -f "$out/$name.stdout"  # stdout has wall times; the JSON holds every statistic
}
export -f run_case
export lpu out zoo LPU_EXTRA_ARGS
n=$(wc -l <"$cases")
echo "stats_compare: $n cases into $out"
tr '\t' ' ' <"$cases" | xargs -P 2 -L 1 bash -c 'run_case "$@"' _

if [ "$mode" = compare ]; then
  if diff -r -x zoo-graphs "$dir" "$out" >"$out.diff"; then
    echo "stats_compare: $n cases, all statistics identical to $dir"
    rm -f "$out.diff"
  else
    echo "stats_compare: DIFFERENCES (first lines; all in $out.diff):"
    head -40 "$out.diff"
    exit 1
  fi
fi
