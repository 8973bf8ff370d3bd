// LPU code generation: a scheduled loop-IR program -> an LPU program (isa/program.h).
// Each kernel is tiled over its rows so the tile working set fits local memory, and a kernel
// whose one row does not fit (a wide LM head) also over the columns of its matmul and
// epilogue (the rule: codegen/tile_plan.h; which nodes split: column_split.h); loads that
// do not depend on the row are hoisted out of the tile loop and stay resident; with double
// buffering, consecutive tiles use alternating halves of local memory so the DMA of tile
// t+1 overlaps the vector work of tile t (the simulator's scoreboard enforces the hazards).
// A kernel's instructions come from its tile walk (tile_walk.h: recorded once, the same record
// tile sizing reads), replayed per tile by the kernel emitter (kernel_emitter.h).
#pragma once
#include "codegen/column_split.h"
#include "isa/program.h"
#include "loopir/loop_ir.h"
#include "schedule/schedule.h"

namespace lpu {

class TileAccessCache;  // codegen/tile_walk.h

struct CodegenOptions {
  int64_t lmu_bytes = 512 * 1024;  // local memory capacity
  bool double_buffer = true;
  int64_t hbm_alignment = 256;  // buffer base alignment in HBM
  int64_t max_tile_rows = 0;    // 0 = as many as fit
  // Fold a kernel's repeating tiles into `loop N ... endloop` with per-iteration HBM address
  // steps (the same execution, a program a fraction of the size).
  bool fold_loops = true;
  // Emit double-buffered tiles skewed by a stage, so the vector engine takes the next tile's
  // work before this tile's epilogue waits for the matrix engine (codegen/tile_skew.h).
  bool skew_tiles = true;
  // Cut a tile's vector work between two matrix stages into row groups, so the second stage
  // starts after the first group (codegen/tile_skew.h: interleave_row_groups).
  bool interleave_rows = true;
  // The VXE runs chains (`vxe.OP.POST ... => rRED`, docs/isa.md; the config's vxe.chains): a
  // unary op on a vector op's result and a row reduction of it go in that op's instruction
  // (softmax's exp(x - max) and its row sum in one pass; tile_walk.h).
  bool vector_chains = true;
  // Local memory above lmu_bytes reserved for the collectives' receive area (the driver sets
  // it, codegen/collective.h; 0 without collectives).
  int64_t collective_lmu_bytes = 0;
};

struct CodegenResult {
  Program program;
  std::vector<KernelTiling> tiling;
};

// The fusion cost model's measure of a kernel (from the tile-footprint analysis, tile_footprint.h;
// nothing is emitted): the HBM bytes it moves when tiled as
// generate_lpu_program tiles it (a matmul's B block is streamed once per tile, so a kernel
// whose tiles hold fewer rows re-reads its weights more often; a column-tiled one re-reads the
// rows feeding its matmul once per column tile) and the local memory its smallest tile needs.
// The scheduler compares these before fusing (schedule.h). Without `with_traffic` only the
// local memory is measured (hbm_bytes stays 0). `cache`: the access analyses of `p`, shared by
// the calls for one program (the scheduler's candidate kernels); without one each call analyses.
KernelCost kernel_cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts, bool with_traffic = true,
                       TileAccessCache* cache = nullptr);

// Every kernel's tiling (plan_tiles, codegen/tile_plan.h; graph breaks get an empty one): the
// driver records it in the schedule (Kernel::tiling) after scheduling. Throws InputError when a
// kernel cannot fit local memory even with one row per tile and cannot be tiled in columns,
// naming the kernel, the bytes it needs and why not in columns. `cache` as for kernel_cost.
// `known`: tilings already planned for some kernels (by index), taken as they are: a kernel's
// tiling depends only on its nodes, the buffers they touch and the options (as kernel_cost).
std::vector<KernelTiling> plan_kernel_tiling(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts,
                                             TileAccessCache* cache = nullptr,
                                             const std::vector<std::optional<KernelTiling>>* known = nullptr);

// Kernels whose code an earlier compile emitted: the same nodes, buffers, tiling and options
// give the same instructions but for HBM addresses, which move with the buffers before them
// (a KV cache that grows). generate_lpu_program copies such a kernel's code, its HBM addresses
// moved to this program's memory map, instead of emitting it, and records the code of the
// kernels marked `reusable` that have none yet. For a decode step's front-end template
// (driver/front_end_template.h), whose fixed kernels are the same at every context.
struct KernelCodeReuse {
  struct Code {
    std::vector<Instruction> code;
    std::vector<int64_t> buffer;  // per instruction: the buffer its HBM address points into (-1: none)
    KernelTiling tiling;
  };
  std::vector<bool> reusable;               // per kernel of the schedule
  std::vector<std::optional<Code>> kernels;  // per kernel: its code, once recorded
};

// Emits each kernel with the tiling recorded in the schedule (a kernel without one is planned
// here, with plan_kernel_tiling's errors); `tiling` in the result is the one emitted. `cache`
// as for kernel_cost: the driver passes the one tiling was planned with, so each kernel's walk
// (codegen/tile_walk.h) is recorded from access analyses already made.
CodegenResult generate_lpu_program(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts,
                                   TileAccessCache* cache = nullptr, KernelCodeReuse* reuse = nullptr);

// One tile as the emitter emits it, for checking the tile-footprint analysis against
// (tests/test_tile_footprint.cpp): the tile region's peak, the HBM bytes of its instructions,
// and the kernel's hoisted bytes and their HBM bytes. `columns` and the window as for
// TileFootprintAnalysis::tile.
struct EmittedTile {
  int64_t peak_bytes = 0, hbm_bytes = 0, hoisted_bytes = 0, hoisted_hbm_bytes = 0;
};
EmittedTile measure_emitted_tile(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, int64_t r0,
                                 int64_t rows, int64_t c0, int64_t cw);

}  // namespace lpu
