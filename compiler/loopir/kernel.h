// Kernels: what scheduling makes of a loop-IR program. A kernel is a list of loop nodes run
// together, its intermediates kept local; a Schedule is the program's kernels in order, with
// the fusion log. schedule/ computes them (schedule_program); the handlers (handlers/) and the
// code generator (codegen/) walk them. Data only, so that the handlers need not see the
// scheduler (docs/layers.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lpu {

// How a kernel is tiled to local memory (codegen/tile_plan.h decides it on the tile-footprint
// analysis, codegen/tile_footprint.h; the driver records it in the schedule after scheduling and
// the code generator emits it, so `--emit schedule` shows the decision the program runs).
struct KernelTiling {
  std::string kernel;
  int64_t tile_rows = 0;  // rows per tile (0: a graph break, not tiled)
  int64_t tiles = 0;      // row tiles x column tiles
  int64_t hoisted_bytes = 0;
  int64_t tile_bytes = 0;  // per buffer (double-buffered kernels use two)
  int64_t tile_cols = 0;   // column tiling: columns per tile of the split nodes (the last
                           // narrower); 0 = whole rows
  int64_t col_tiles = 1;   // column tiles per row tile
  int64_t buffers = 1;     // tile regions: 2 double-buffered
};

struct Kernel {
  std::string name;
  std::vector<int> nodes;                // indices into LoopProgram::nodes, topological
  int64_t rows = 1;                      // shared row count of its nodes
  std::vector<std::string> hbm_outputs;  // buffers it writes to HBM
  std::optional<KernelTiling> tiling;    // once planned (absent straight out of scheduling)
};

struct FusionDecision {
  std::string producer;  // first node of each group (names)
  std::string consumer;
  std::string kind;         // "vertical" | "horizontal" | "concatenation"
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
