#!/usr/bin/env bash
# Graph breaks end to end on a model exported from PyTorch (tests/frontend/models.py:
# gpt_block, whose softmax decomposes to the core op exp). With exp removed from the supported
# set (--unsupported-ops=exp):
#   --on-unsupported=break  the run passes against PyTorch's outputs, lists the break, and its
#                           latency exceeds the unbroken run's by at least host.latency_us;
#   (default: error)        exit 2, naming the op and the node.
# Usage: tests/graph_break_test.sh BUILD_DIR
set -u
BUILD="${1:?usage: tests/graph_break_test.sh BUILD_DIR}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LPU="$(cd "$BUILD" && pwd)/lpu"
PYTHON="${LPU_PYTHON:-/usr/bin/python3}"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"  # lpu_frontend (docs/python.md)
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PYTHON" "$ROOT/tests/frontend/export_models.py" "$TMP" gpt_block >/dev/null || fail "export"
M="$TMP/gpt_block.json"

"$LPU" run "$M" --functional --json "$TMP/base.json" >"$TMP/base.txt" 2>&1 || fail "unbroken run: $(tail -1 "$TMP/base.txt")"
"$LPU" run "$M" --functional --unsupported-ops=exp --on-unsupported=break --json "$TMP/brk.json" >"$TMP/brk.txt" 2>&1 \
  || fail "run with a break: $(tail -3 "$TMP/brk.txt")"
cat "$TMP/brk.txt"
grep -qE '^graph breaks +1, host time' "$TMP/brk.txt" || fail "the summary does not list one graph break"
grep -qE 'break .* exp' "$TMP/brk.txt" || fail "the summary does not name the break"
grep -q 'PASS' "$TMP/brk.txt" || fail "functional check did not pass"

"$PYTHON" - "$TMP/base.json" "$TMP/brk.json" <<'PY' || fail "statistics"
import json, sys
base, brk = (json.load(open(p)) for p in sys.argv[1:3])
gb = brk["graph_breaks"]
assert len(gb) == 1 and gb[0]["op"] == "exp" and gb[0]["bytes"] > 0 and gb[0]["host_us"] > 0, gb
assert base["graph_breaks"] == [], base["graph_breaks"]
assert brk["functional"]["ok"], brk["functional"]
host = brk["arch"]["host"]
expect = host["latency_us"] + gb[0]["bytes"] / (host["link_gbps"] * 1e3) + host["op_us"]
assert abs(gb[0]["host_us"] - expect) < 1e-9, (gb[0]["host_us"], expect)
extra = brk["latency_us"] - base["latency_us"]
assert extra >= host["latency_us"], f"latency grew by {extra} us, less than host.latency_us = {host['latency_us']}"
print(f"break {gb[0]['node']}: {gb[0]['bytes']} B, {gb[0]['host_us']:.3f} us on the host; latency "
      f"{base['latency_us']:.3f} -> {brk['latency_us']:.3f} us")
PY

"$LPU" run "$M" --functional --unsupported-ops=exp >"$TMP/err.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "without --on-unsupported=break: exit $rc, expected 2"
grep -q "op 'exp'" "$TMP/err.txt" && grep -q "node %" "$TMP/err.txt" || fail "error does not name op and node: $(cat "$TMP/err.txt")"

"$LPU" compile "$M" --unsupported-ops=exp --on-unsupported=break --emit schedule >"$TMP/sched.txt" 2>&1 || fail "compile"
grep -q "graph breaks: 1" "$TMP/sched.txt" && grep -q "reason: graph break" "$TMP/sched.txt" \
  || fail "--emit schedule does not show the break: $(tail -5 "$TMP/sched.txt")"
"$LPU" run "$M" --on-unsupported=maybe >/dev/null 2>&1
[ $? -eq 2 ] || fail "--on-unsupported=maybe is not a usage error"
echo "graph break test: ok"
