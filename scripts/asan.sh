#!/usr/bin/env bash
# The sanitizer build (AddressSanitizer + UndefinedBehaviorSanitizer) in build-asan/, sharing
# nothing with build/: clang, -O1, libFuzzer coverage (for scripts/fuzz.sh), no RTL.
#   scripts/asan.sh configure        configure build-asan/
#   scripts/asan.sh test [ARGS...]   run ctest in build-asan/ with the sanitizer options (ARGS
#                                    go to ctest, e.g. -L asan for CI's subset)
# Options: leaks are detected. SystemC switches between its own coroutine stacks
# (QuickThreads); detect_stack_use_after_return stays off because its fake stacks do not follow
# those switches (docs/robustness.md, "Sanitizers").
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  configure)
    scripts/install-deps.sh
    # CMAKE_CXX_FLAGS_DEBUG replaced: its default -g would come after -gline-tables-only and
    # win (full debug info: 8% more compile time and larger objects to link); line tables
    # are all the sanitizers' reports need to name file:line.
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_CXX_FLAGS="-O1" -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only" -DLPU_SANITIZE=ON -DLPU_FUZZERS=ON -DLPU_WITH_RTL=OFF \
      -DLPU_WERROR=ON >/dev/null ;;
  test)
    shift
    export ASAN_OPTIONS="detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    # use_stacks=0: SystemC 2.3.4 announces its coroutine switches to ASan
    # (__sanitizer_start/finish_switch_fiber), and after a simulation the main thread's recorded
    # stack can be left on a coroutine's stack, whose guard page SystemC mprotects; LeakSanitizer's
    # exit-time scan of that "stack" then dies on SIGSEGV ("Tracer caught signal 11") in about
    # half the runs of any simulating test on some machines (also with the code of 2026-12-01).
    # Globals, TLS and the heap are still scanned; only thread stacks are not taken as roots.
    export LSAN_OPTIONS="use_stacks=0"
    cd build-asan && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@" ;;
  *) echo "usage: scripts/asan.sh configure|test [ctest args]" >&2; exit 2 ;;
esac
