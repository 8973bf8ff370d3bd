#!/usr/bin/env bash
# Rebuilds the shipped serving traces (workloads/traces/*.csv) from their specs in
# workbench/serve/shipped_traces.cpp, with the generator the simulator uses. Usage:
#   scripts/make_serve_traces.sh [BUILD_DIR]        (default: build)
# The same test without LPU_REGEN_TRACES checks that the files still match their specs.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake --build "$build" --target test_serve_trace
LPU_REGEN_TRACES=1 "$build/tests/test_serve_trace" --gtest_filter='ServeGenerator.ShippedTracesMatchTheirSpecs'
git status --short workloads/traces
