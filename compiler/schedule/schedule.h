// Scheduling: grouping loop-IR nodes into kernels (fusion).
//   none    one kernel per loop-IR node; every intermediate goes through HBM
//   greedy  Inductor-like: candidate pairs ranked by HBM bytes saved, fused greedily when legal
// Every candidate pair considered is recorded with its score, the decision and, for a
// rejection, the reason (the "why not fused" log).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loopir/loop_ir.h"

namespace lpu {

struct Kernel {
  std::string name;
  std::vector<int> nodes;                 // indices into LoopProgram::nodes, topological
  int64_t rows = 1;                       // shared row count of its nodes
  std::vector<std::string> hbm_outputs;   // buffers it writes to HBM
};

struct FusionDecision {
  std::string producer;   // first node of each group (names)
  std::string consumer;
  std::string kind;       // "vertical" | "horizontal"
  int64_t score_bytes = 0;
  bool fused = false;
  std::string reason;     // why rejected (empty when fused)
};

struct ScheduleOptions {
  std::string policy = "greedy";
  // Local-memory capacity (0 = unlimited) and the measure of what a candidate kernel needs
  // with one row per tile (set by the driver from the code generator). Fusions that would
  // not fit are declined with reason "local-memory overflow".
  int64_t lmu_bytes = 0;
  std::function<int64_t(const struct Kernel&)> lmu_need;
};

struct Schedule {
  std::string policy;
  std::vector<Kernel> kernels;            // topological order
  std::vector<FusionDecision> decisions;
};

Schedule schedule_program(const LoopProgram& p, const ScheduleOptions& opts);
const std::vector<std::string>& fusion_policies();

// Graph inputs + weights read once, graph outputs written once: the traffic lower bound.
int64_t compulsory_hbm_bytes(const LoopProgram& p);

std::string print_schedule(const LoopProgram& p, const Schedule& s);
// The fusion report as JSON: kernels (with the graph nodes they came from) and every
// candidate pair with score, decision and reason.
std::string schedule_to_json(const LoopProgram& p, const Schedule& s);

}  // namespace lpu
