#!/bin/bash
# `lpu run MANIFEST`: the two graphs Dynamo made for a module with a graph break (exported on
# PyTorch 2.11, tests/fixtures/hf/dynamo_break) run as one program, each checked against
# PyTorch, with the break priced on the host; bad manifests are exit 2 naming the key.
# Usage: manifest_test.sh BUILD_DIR   (run from the repository root)
set -u
LPU="$1/lpu"
DIR=tests/fixtures/hf/dynamo_break
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3

for fusion in greedy none; do
  out=$("$LPU" run $DIR/manifest.json --functional --fusion $fusion --arch lpu-small --json "$TMP/run_$fusion.json" 2>&1) \
    || fail "manifest run ($fusion) exited $?: $out"
  echo "$out"
  echo "$out" | grep -q "2 graphs, 1 graph breaks" || fail "no graph/break count"
  echo "$out" | grep -Eq "^break graph_0 -> graph_1: dynamo graph break, 4 B over the host link, [0-9.]+ us on the host" \
    || fail "the break line (4 B: the f32 sum the host branches on)"
  [ "$(echo "$out" | grep -c PASS)" = 2 ] || fail "both graphs must match PyTorch"
done

# The JSON: break cost = the host op formula on lpu-small, total = graphs + break.
$PY - "$TMP/run_greedy.json" configs/lpu-small.yaml <<'PYEOF' || fail "JSON statistics"
import json, sys
j = json.load(open(sys.argv[1]))
import re
cfg = open(sys.argv[2]).read()
b = j["graph_breaks"]
assert len(b) == 1 and b[0]["bytes"] == 4 and b[0]["op"] == "dynamo graph break", b
assert b[0]["host_us"] > 0 and abs(j["graph_breaks_host_us"] - b[0]["host_us"]) < 1e-12
graphs = sum(g["latency_us"] for g in j["graphs"])
assert abs(j["latency_us"] - graphs - b[0]["host_us"]) < 1e-9, (j["latency_us"], graphs, b)
assert j["hbm_read_bytes"] == sum(g["hbm_read_bytes"] for g in j["graphs"])
assert j["functional"]["ok"] is True
print("json ok: break", b[0]["host_us"], "us; total", j["latency_us"], "us")
PYEOF

# Bad manifests: exit 2, one line naming the problem.
bad() {  # NAME EXPECTED-TEXT PYTHON-EDIT
  mkdir -p "$TMP/$1" && cp $DIR/graph_* "$TMP/$1/"
  $PY -c "import json,sys; m=json.load(open('$DIR/manifest.json')); $3; json.dump(m, open('$TMP/$1/manifest.json','w'))"
  out=$("$LPU" run "$TMP/$1/manifest.json" 2>&1); rc=$?
  [ $rc = 2 ] || fail "$1: exit $rc, want 2: $out"
  echo "$out" | grep -qF "$2" || fail "$1: want '$2' in: $out"
  echo "ok: $1: $out"
}
bad newer_version "file has manifest version 2; this build reads version 1" "m['version']=2"
bad later_graph "is not an earlier graph" "m['graphs'][0]['inputs'][0]={'name':'L_x_','from':'graph','graph':1,'output':0}"
bad type_mismatch "but graph 0 output 0 is f32[]" "[i.update(output=0) for i in m['graphs'][1]['inputs'] if i['from']=='graph']"
bad unknown_key "graphs[1].inputs[0]: unknown key 'form'" "m['graphs'][1]['inputs'][0]['form']=1"
bad no_placeholder "has no placeholder %nope" "m['graphs'][0]['inputs'][0]['name']='nope'"
bad missing_file "no such graph file" "m['graphs'][1]['file']='absent.json'"
bad output_count "must list the graph's 2 outputs" "m['graphs'][0]['outputs'].pop()"
# Only `lpu run` takes a manifest; elsewhere it is an input error that says so.
out=$("$LPU" compile $DIR/manifest.json 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "this is a manifest of several graphs" || fail "compile MANIFEST: exit $rc: $out"
echo "manifest test passed"
