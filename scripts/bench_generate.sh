#!/bin/sh
# Generation speed, symbolic decode programs against compiling every step (docs/generate.md#speed):
#   scripts/bench_generate.sh [MODEL] [PROMPT_LEN] [GEN_LEN]      (default: opt-1.3b 32 2016)
# Prints, for both, compiles, instantiated steps, guard failures, wall (compile / simulate) and
# user CPU, and checks that every step's cycles and bytes are equal. Run from the repository root
# after building build/lpu.
set -eu
MODEL=${1:-opt-1.3b} P=${2:-32} G=${3:-2016}
OUT=${OUT:-out/bench-generate}
mkdir -p "$OUT"
for mode in symbolic plain; do
  flag=""; [ "$mode" = plain ] && flag="--no-symbolic"
  /usr/bin/time -f "%U" -o "$OUT/$mode.user" build/lpu generate "$MODEL" --prompt-len "$P" --gen-len "$G" $flag \
    --json "$OUT/$mode.json" > /dev/null
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
r = {m: json.load(open(f"{d}/{m}.json")) for m in ("symbolic", "plain")}
for m, j in r.items():
    c, w = j["compile_cache"], j["wall"]
    user = float(open(f"{d}/{m}.user").read().split()[-1])
    print(f"{m:9s} compiles {c['compiles']:5d}  instantiated {c['instantiated']:5d}  guard failures {c['guard_failures']:5d}  "
          f"wall {w['total_s']:8.2f} s (compile {w['compile_s']:8.2f} s, simulate {w['simulate_s']:7.2f} s)  "
          f"user CPU {user:8.2f} s  (compile+simulate)/simulate {(w['compile_s'] + w['simulate_s']) / w['simulate_s']:.1f}x")
same = [(a["cycles"], a["hbm_bytes"]) for a in r["symbolic"]["steps"]] == [(b["cycles"], b["hbm_bytes"]) for b in r["plain"]["steps"]]
print("every step's cycles and bytes equal:", same)
sys.exit(0 if same else 1)
PY
