#!/usr/bin/env bash
# Installs the Debian packages the workbench needs to build, test and report.
# Idempotent: only packages not yet installed are fetched. Non-interactive.
# Every package the build (CMakeLists.txt), the tests and the reports use is listed here;
# CI machines start without them.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build make pkg-config
  # libraries (no vendored copies)
  libsystemc-dev libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  # the lpu and lpu-bench programs' malloc (apps/CMakeLists.txt, LPU_ALLOCATOR)
  libmimalloc-dev
  # RTL co-simulation
  verilator
  # sanitizer build, libFuzzer targets and the format check (.ci/run)
  clang clang-format
  # reports and the PyTorch frontend (run with /usr/bin/python3); the Python tests (pytest) and
  # an offline venv for the package (docs/python.md)
  python3 python3-matplotlib python3-numpy python3-torch python3-pytest python3-venv
  # the Python module `lpu` (pybind11), its DataFrames and the notebooks of examples/ run by CI
  pybind11-dev python3-dev python3-pandas jupyter-nbconvert python3-ipykernel python3-nbformat
  # a single-node Slurm for the tests of `lpu sweep --backend slurm` (scripts/slurm-local.sh)
  slurmctld slurmd slurm-client munge
  # report pages rendered in a real browser (tests/report_render_test.py)
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install-deps: not root and no password-less sudo; install these packages as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} packages"
