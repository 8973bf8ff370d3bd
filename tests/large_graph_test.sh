#!/bin/bash
# A LLaMA-2-7B decode step as a graph file (fp16, 6.7e9 weights, 13.5 GB sidecar created
# sparse by lpu-large-graph): a timing run reads only the JSON, reports exactly the statistics
# of the built-in workload it came from, never opens the sidecar (it still runs with the
# sidecar deleted), and stays under 1 GB of memory. A functional run needs the weights and
# says which file and array are missing (exit 2).
# Usage: large_graph_test.sh BUILD_DIR   (run from the repository root)
set -u
B="$1"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$B/lpu-large-graph" "$TMP" llama2-7b-decode || fail "generator"
F="$TMP/llama2-7b-decode.json"
[ "$(stat -c %s "$TMP/llama2-7b-decode.bin")" -gt 13000000000 ] || fail "sidecar size"
"$B/lpu" run llama2-7b-decode --arch lpu-asic --json "$TMP/builtin.json" >/dev/null || fail "built-in run"
rm "$TMP/llama2-7b-decode.bin"
/usr/bin/python3 - "$B/lpu" "$F" "$TMP" <<'PYEOF' || fail "file run"
import json, resource, subprocess, sys
lpu, f, tmp = sys.argv[1:]
r = subprocess.run([lpu, "run", f, "--arch", "lpu-asic", "--json", tmp + "/file.json"], capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
a, b = json.load(open(tmp + "/builtin.json")), json.load(open(tmp + "/file.json"))
for k in ("cycles", "latency_us", "hbm_read_bytes", "hbm_write_bytes", "compulsory_hbm_bytes", "instructions"):
    assert a[k] == b[k], (k, a[k], b[k])
assert rss_mib < 1024, f"peak RSS {rss_mib:.0f} MiB"
print(f"timing run without the sidecar: same statistics as the built-in, peak RSS {rss_mib:.0f} MiB")
r = subprocess.run([lpu, "run", f, "--arch", "lpu-asic", "--functional"], capture_output=True, text=True)
assert r.returncode == 2 and "llama2-7b-decode.bin" in r.stderr and "cannot open" in r.stderr, r.stdout + r.stderr
print("functional run without the sidecar: exit 2:", r.stderr.strip()[:200])
PYEOF
echo "large graph test passed"
