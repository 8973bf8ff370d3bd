// The jobs users run, shared by the CLI, the tests and the benchmarks:
// compile a workload for an architecture, simulate it, check it against the reference.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/arch_config.h"
#include "driver/compile.h"
#include "simulator.h"
#include "workload/workload.h"

namespace lpu {

struct FunctionalCheck {
  double max_abs_error = 0;
  double max_rel_error = 0;
  double atol = 0, rtol = 0;   // pass iff |sim - ref| <= atol + rtol * |ref| everywhere
  bool ok = false;
  std::string worst;           // "output[index]: sim vs ref"
};

struct RunOutcome {
  WorkloadSpec workload;
  ArchConfig arch;
  std::string fusion;
  Compilation comp;
  SimResult sim;
  std::optional<FunctionalCheck> check;
  double wall_seconds = 0;     // simulation wall time
  nlohmann::json to_json() const;
};

CompileOptions compile_options_for(const ArchConfig& arch, const std::string& fusion);

RunOutcome run_job(const WorkloadSpec& w, const ArchConfig& arch, const std::string& fusion, bool functional,
                   bool trace = false);

// Tolerances by dtype: fp32 1e-4 (abs and rel), fp16/bf16 looser (their rounding).
FunctionalCheck check_outputs(const std::vector<Tensor>& expected, const std::vector<std::string>& names,
                              const TensorMap& actual, DType dtype);

// Aligned text table.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
std::string human_bytes(uint64_t b);

}  // namespace lpu
