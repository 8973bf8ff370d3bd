// How a kernel is tiled to local memory: the one decision the scheduler's fit check (through
// kernel_cost), the local-memory layout and the emitted tiles all read (lpu_codegen.cpp).
// In order of preference:
//   1. whole rows, as many per tile as fit (hoisted operands stay resident below the tile
//      regions, one region per buffer: two when lmu.double_buffer);
//   2. one whole row single-buffered, when it fits only once (a wide LM head row on a small
//      LMU): no DMA/compute overlap between tiles, but no operand is re-read either;
//   3. when not even one whole row fits: column tiles of the split nodes (column_split.h),
//      rows x cols per tile, with the configured buffering;
//   4. column tiles single-buffered.
// Only 1 and 3 count as fitting for the scheduler (`configured`), so no fusion produces a
// kernel of 2 or 4. Column tiles come last because where a whole row fits single-buffered
// they bought nothing (gpt2-decode on lpu-small: +309 cycles, docs/scheduling.md). The
// tile-footprint analysis (tile_footprint.h) sizes every candidate, without emitting it.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>

#include "codegen/column_split.h"
#include "codegen/lpu_codegen.h"
#include "codegen/tile_footprint.h"
#include "isa/program.h"

namespace lpu {

constexpr int64_t kLmAlign = 64;  // allocation granule in local memory
inline int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
// Bytes of a [rows, cols] register in local memory (fp32 elements, rounded up to the granule):
// the one size rule the emitter and the tile-footprint analysis both allocate by.
inline uint64_t lm_register_bytes(int64_t rows, int64_t cols) {
  constexpr int64_t kElem = 4;  // local memory holds fp32
  return static_cast<uint64_t>(align_up(rows * cols * kElem, kLmAlign));
}

// A division by a per-row value (a softmax's normalisation: [rows, cols] / [rows, 1]) runs as
// one reciprocal per row and a multiply, since the vector engine divides at the divide class's
// initiation interval (vxe.ops) and multiplies at the ALU's. The emitter and the tile-footprint
// analysis both apply it: the reciprocal is a [rows, 1] register of its own.
inline bool divides_by_row_value(ScalarOp op, bool divisor_immediate, int64_t divisor_cols, int64_t cols) {
  return op == ScalarOp::div && !divisor_immediate && divisor_cols == 1 && cols > 1;
}

struct TilePlan {
  bool fits = false;          // some tiling fits local memory
  bool configured = false;    // ... with the configured buffering (rules 1 and 3)
  int64_t min_lmu_bytes = 0;  // hoisted + the smallest tile x buffers: one whole row unless 3
  int64_t buffers = 1;        // tile regions: 2 double-buffered
  int64_t rows = 1, hoisted = 0, tile_bytes = 0;
  int64_t one_row_bytes = 0;  // hoisted + one whole row, single-buffered
  ColumnSplit columns;        // analysed only when one whole row does not fit (3, 4)
  bool col_tiled = false;
  int64_t cols = 0, col_tiles = 1;  // column tile width (the last narrower) and tiles per row
};

// `size_only`: only what the scheduler's fit check reads (fits, configured, min_lmu_bytes).
// `footprint`, when given, receives the analysis of the chosen tiling (whole rows or the
// column split): kernel_cost asks it for the traffic of the tiles. `cache`: access analyses of
// `p` shared between kernels (tile_footprint.h).
TilePlan plan_tiles(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts, bool size_only = false,
                    std::unique_ptr<TileFootprintAnalysis>* footprint = nullptr, TileAccessCache* cache = nullptr);

// The plan a kernel's recorded tiling stands for (the column split recomputed when it is
// column-tiled): what the code generator emits.
TilePlan plan_from_tiling(const LoopProgram& p, const Kernel& k, const KernelTiling& t);

// The column window [c0, c0 + cw) of column tile j; {0, 0} (whole rows) without column tiling.
std::pair<int64_t, int64_t> column_window(const TilePlan& t, int64_t j);

// HBM bytes one instruction moves, as the simulator counts them (DMA: every element; the
// SXE streams its whole B block once per instruction, whatever the number of A rows).
int64_t instruction_hbm_bytes(const Instruction& in);

}  // namespace lpu
