#!/usr/bin/env bash
# Checks that the listed C++ files follow .clang-format (Debian's clang-format). The list
# grows as files are touched; a tree-wide reformat would collide with parallel work.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(compiler/support/json_util.h compiler/support/json_util.cpp fuzz/*.cpp fuzz/*.h sim/program_check.h sim/program_check.cpp)
clang-format --dry-run --Werror "${FILES[@]}"
echo "format-check: ${#FILES[@]} files ok"
