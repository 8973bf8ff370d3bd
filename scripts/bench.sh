#!/usr/bin/env bash
# Benchmarks (not tests): fusion policies on every built-in LLM decode step, and simulator
# speed. Usage: scripts/bench.sh [BUILD_DIR] [policies|simulator|all]
set -euo pipefail
BUILD="${1:-build}"
cd "$(dirname "$0")/.."
"$BUILD/lpu-bench" "${2:-all}"
