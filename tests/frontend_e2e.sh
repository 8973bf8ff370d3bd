#!/usr/bin/env bash
# End-to-end acceptance of the PyTorch frontend: export every model of the zoo
# (tests/frontend/models.py) with PyTorch, then compile, simulate and check each one:
#   BUILD_DIR/lpu run MODEL.json --functional
# must exit 0 and print the max abs error of the simulated outputs against PyTorch's
# (pass: |sim - torch| <= 1e-4 * max(1, |torch|) for fp32).
# Usage: tests/frontend_e2e.sh BUILD_DIR [MODEL...]
# Not in ctest yet: it needs the back end to lower matmul and the data-movement ops.
set -u
BUILD="${1:?usage: tests/frontend_e2e.sh BUILD_DIR [MODEL...]}"
shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LPU="$(cd "$BUILD" && pwd)/lpu"
PYTHON="${LPU_PYTHON:-/usr/bin/python3}"  # the interpreter that has PyTorch
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"  # lpu_frontend (docs/python.md)
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

[ -x "$LPU" ] || { echo "no lpu binary at $LPU"; exit 2; }
"$PYTHON" "$ROOT/tests/frontend/export_models.py" "$TMP" "$@" || { echo "FAIL: export"; exit 1; }

pass=0
fail=0
for json in "$TMP"/*.json; do
  name="$(basename "$json" .json)"
  out="$("$LPU" run "$json" --functional 2>&1)"
  rc=$?
  err="$(grep -oE 'functional: max abs error [^,]+' <<<"$out" | sed 's/functional: max abs error //')"
  if [ "$rc" -eq 0 ] && [ -n "$err" ]; then
    printf 'ok   %-20s max abs error %s\n' "$name" "$err"
    pass=$((pass + 1))
  else
    printf 'FAIL %-20s exit %s: %s\n' "$name" "$rc" "$(tail -1 <<<"$out")"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
