// Per-kernel and per-op-class roofline tables of a run: achieved span against the kernel's
// roofline on the config, and where the rest went (the simulator's SpanBreakdown). Shared by
// `lpu run` (text and --json) and `lpu-bench roofline`.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jobs/jobs.h"

namespace lpu {

// The breakdown's categories in the simulator's priority order (docs/sim-model.md).
constexpr int kBreakdownKinds = 7;
const std::array<const char*, kBreakdownKinds>& breakdown_names();
std::array<uint64_t, kBreakdownKinds> breakdown_array(const SpanBreakdown& b);

// What a kernel lost against its roofline, by category: its cycles in each, except that the
// bound resource's own category (bandwidth for an HBM-bound kernel, compute for an SXE- or
// VXE-bound one) keeps only what exceeds the roofline. They sum to cycles - roofline whenever
// that category covers the roofline (always for HBM-bound kernels: bandwidth has priority).
std::array<double, kBreakdownKinds> kernel_loss(const KernelStats& k);

struct ClassRoofline {
  std::string op_class;
  int kernels = 0;
  uint64_t bytes = 0, cycles = 0;  // HBM bytes; sum of the kernels' spans
  double roofline_cycles = 0;
  std::array<uint64_t, kBreakdownKinds> breakdown{};
  std::array<double, kBreakdownKinds> loss{};
  int top_blocker() const;  // index of the largest loss
};

std::vector<std::string> kernel_classes(const RunOutcome& o);       // one per kernel
std::vector<ClassRoofline> roofline_by_class(const RunOutcome& o);  // in op_class_order(), present classes only

// The step's HBM floor: compulsory bytes (weights, inputs incl. the KV cache, outputs) at the
// peak bandwidth, and at the sustained one (peak x hbm.efficiency), in cycles.
struct StepFloor {
  uint64_t bytes = 0;
  double peak_cycles = 0, sustained_cycles = 0;
};
StepFloor step_floor(const RunOutcome& o);

nlohmann::json roofline_classes_json(const RunOutcome& o);
std::string format_top_kernels(const RunOutcome& o, size_t n);
std::string format_class_roofline(const RunOutcome& o);

}  // namespace lpu
