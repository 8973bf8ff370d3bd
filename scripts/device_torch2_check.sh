#!/bin/bash
# The Python module and lpu_frontend on torch 2.x (Dynamo), on the accelerator machine
# (docs/frontend.md, "torch.compile to a simulated answer"). CI never runs there.
#
#   scripts/device_torch2_check.sh prepare   # here (Debian): SystemC's headers and library into
#                                            # out/devsysc, which that machine lacks
#   scripts/device_torch2_check.sh run       # there, from the repository root, with the files
#                                            # carried: device `run` with carry ["out/devsysc"]
#
# `run` builds `_lpu` and `lpu` with that machine's Python (torch 2.11) into build-dev/ and runs
# the tests whose torch 2.x paths Debian's torch 1.13 skips. Its log goes to $OUT when set.
set -euo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
D=$R/out/devsysc
case "${1:-}" in
prepare)
  mkdir -p "$D/include" "$D/lib/pkgconfig"
  for h in sysc systemc systemc.h tlm tlm.h tlm_core tlm_utils; do cp -r "/usr/include/$h" "$D/include/"; done
  cp -a /usr/lib/x86_64-linux-gnu/libsystemc* "$D/lib/"
  cat > "$D/lib/pkgconfig/systemc.pc" <<PC
prefix=$D
libdir=\${prefix}/lib
includedir=\${prefix}/include
Name: SystemC
Description: SystemC carried from Debian 12
Version: 2.3.4
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lsystemc
Cflags: -I\${includedir}
PC
  echo "out/devsysc ready ($(du -sh "$D" | cut -f1)): carry it to the device run" ;;
run)
  [ -d "$D" ] || { echo "error: $D missing: run '$0 prepare' here and carry out/devsysc" >&2; exit 2; }
  [ -n "${OUT:-}" ] && exec > >(tee "$OUT/torch2_check.log") 2>&1
  export PKG_CONFIG_PATH=$D/lib/pkgconfig
  B=$R/build-dev
  python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
  cmake -S "$R" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLPU_WITH_RTL=OFF \
    -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" > "$B.cmake.log" 2>&1 \
    || { tail -30 "$B.cmake.log"; exit 1; }
  ninja -C "$B" _lpu lpu > "$B.build.log" 2>&1 || { tail -30 "$B.build.log"; exit 1; }
  echo "symbols _lpu exports: $(nm -D --defined-only "$B"/python/_lpu*.so | wc -l)"
  export LPU_BIN=$B/lpu LPU_BUILD_DIR=$B PYTHONPATH=$R/python:$R/reports
  python3 -c "import torch; import lpu; print('torch + lpu:', lpu.run('opt-1.3b', arch='lpu-asic')['latency_us'], 'us')"
  cd "$R" && python3 -m pytest -q -rA -p no:logging -p no:cacheprovider \
    tests/python_simulate_test.py tests/frontend/test_buffers_and_manifest.py ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
