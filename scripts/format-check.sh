#!/usr/bin/env bash
# Checks that the listed C++ files follow .clang-format (Debian's clang-format). The list
# grows as files are touched; a tree-wide reformat would collide with parallel work.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(compiler/support/json_util.h compiler/support/json_util.cpp compiler/ops/*.h compiler/ops/*.cpp
       compiler/graph/attrs_json.h compiler/graph/attrs_json.cpp compiler/loopir/kernel.h fuzz/*.cpp fuzz/*.h
       sim/program_check.h sim/program_check.cpp apps/lpu/generate.h apps/lpu/generate.cpp apps/lpu/progress.h
       apps/lpu/progress.cpp tests/test_generate.cpp)
clang-format --dry-run --Werror "${FILES[@]}"
echo "format-check: ${#FILES[@]} files ok"
