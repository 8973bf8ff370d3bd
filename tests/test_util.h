// Helpers shared by the test suites: the default small config and built-in workloads at
// chosen sizes.
#pragma once
#include <string>

#include "config/arch_config.h"
#include "workload/workload.h"

namespace lpu::testutil {

inline ArchConfig small_arch() { return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml"); }

// A built-in model with `tokens` rows and every shape key set to `width`.
inline WorkloadSpec builtin(const std::string& model, int64_t tokens, int64_t width) {
  WorkloadSpec w;
  w.name = model;
  w.model = model;
  w.seq_len = tokens;
  for (const auto& [k, v] : find_model_builder(model)->params) w.params[k] = width;
  return w;
}

}  // namespace lpu::testutil
