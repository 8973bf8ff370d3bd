// The specs of the traces shipped in workloads/traces/ (README.md there says what they imitate).
// They are data made by code: the test test_serve_trace regenerates each and compares it with
// the file byte for byte, and LPU_REGEN_TRACES=1 rewrites the files
// (scripts/make_serve_traces.sh), so a spec changed here and a file on disk cannot drift apart.
#pragma once
#include <string>
#include <vector>

#include "serve/generator.h"

namespace lpu::serve {

struct ShippedTrace {
  std::string file;  // relative to the repository root
  GeneratorSpec spec;
};

std::vector<ShippedTrace> shipped_traces();

}  // namespace lpu::serve
