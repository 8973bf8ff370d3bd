// The tile-footprint analysis: what one tile of a kernel needs in local memory and moves over
// HBM, computed from the kernel's loop nodes and buffers without emitting it. Tile planning
// (tile_plan.h) asks it for every candidate tiling, the fusion cost model (kernel_cost) for
// the traffic of the chosen one; the code generator then emits with that tiling.
//
// It reads the kernel's tile walk (tile_walk.h), the record the emitter emits from, recorded
// once per kernel, and replays it per candidate tile with the emitter's own per-tile decisions
// (tile_replay.h): the registers' sizes, which loads share one, the expands the shapes call for,
// and where each register is last read; the tile region's peak is those registers placed by the
// emitter's first-fit allocator (region_allocator.h), the tile's HBM bytes are rows x columns x
// element bytes per access, a matmul's B block once per run of rows sharing it. A replay touches
// tens of ops, whatever the number of rows (only a matmul's HBM bytes look at each row: which
// rows share a B block). What does not depend on the kernel (the access analyses: analyze_access,
// the index algebra of a matmul's B; each node's body walk) is done once per program when the
// analyses share a TileAccessCache, as the scheduler's do.
//
// Recording the walk throws what emitting would for a kernel that cannot be emitted
// (tile_walk.h), so the scheduler and the user see the same errors.
//
// What the sizing sink counts (register uses, HBM bytes) is its own model of the instructions
// the emitter's sink writes: tests/test_tile_footprint.cpp checks it against the emitter's
// measurement (measure_emitted_tile, lpu_codegen.h) on every kernel of several workloads.
#pragma once
#include <cstdint>
#include <memory>

#include "codegen/column_split.h"
#include "codegen/tile_walk.h"
#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

// One tile as the emitter would emit it.
struct TileFootprint {
  int64_t peak_bytes = 0;  // the tile region's peak (not aligned)
  int64_t hbm_bytes = 0;   // HBM bytes the tile's instructions move (hoisted loads excluded)
};

class TileFootprintAnalysis {
 public:
  // `columns`: the kernel's column split when tiles are column windows (else whole rows).
  // `cache`: access analyses of `p` to share (else the analysis keeps its own, which marks
  // vector chains when `vector_chains`, as CodegenOptions::vector_chains says: chains change
  // which values a tile holds). The kernel, the program and the cache must outlive the analysis.
  TileFootprintAnalysis(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns = nullptr,
                        TileAccessCache* cache = nullptr, bool vector_chains = true);
  ~TileFootprintAnalysis();
  TileFootprintAnalysis(const TileFootprintAnalysis&) = delete;
  TileFootprintAnalysis& operator=(const TileFootprintAnalysis&) = delete;

  // Tile rows [r0, r0 + rows) x columns [c0, c0 + cw) of the split nodes (whole rows without
  // a split: c0 and cw are then ignored).
  TileFootprint tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw);
  // The parts alone: the first tile's peak (what plan_tiles sizes), a tile's HBM bytes.
  int64_t peak_bytes(int64_t rows, int64_t cw);
  int64_t hbm_bytes(int64_t r0, int64_t rows, int64_t c0, int64_t cw);
  // Row-invariant loads, resident below the tile regions: local-memory bytes (each aligned to
  // the allocation granule) and the HBM bytes loading them once moves.
  int64_t hoisted_bytes();
  int64_t hoisted_hbm_bytes();

  struct Impl;  // tile_footprint.cpp

 private:
  std::unique_ptr<TileAccessCache> own_cache_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lpu
