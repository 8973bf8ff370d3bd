// Kernels: what scheduling makes of a loop-IR program. A kernel is a list of loop nodes run
// together, its intermediates kept local; a Schedule is the program's kernels in order, with
// the fusion log. schedule/ computes them (schedule_program); the handlers (handlers/) and the
// code generator (codegen/) walk them. Data only, so that the handlers need not see the
// scheduler (README "Layers").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lpu {

struct Kernel {
  std::string name;
  std::vector<int> nodes;                // indices into LoopProgram::nodes, topological
  int64_t rows = 1;                      // shared row count of its nodes
  std::vector<std::string> hbm_outputs;  // buffers it writes to HBM
};

struct FusionDecision {
  std::string producer;  // first node of each group (names)
  std::string consumer;
  std::string kind;         // "vertical" | "horizontal"
  int64_t score_bytes = 0;  // ranking: bytes the pair would save before tiling is considered
  // The cost model's verdict (when it was asked): HBM bytes of the two kernels apart and of
  // the fused kernel, as tiled by the code generator. saved = apart - fused.
  int64_t apart_bytes = 0, fused_bytes = 0;
  bool fused = false;
  std::string reason;  // why rejected (empty when fused)
};

struct Schedule {
  std::string policy;
  std::vector<Kernel> kernels;  // topological order
  std::vector<FusionDecision> decisions;
};

}  // namespace lpu
