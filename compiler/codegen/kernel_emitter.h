// The emitter of one kernel's tiles: the instructions of each tile from the kernel's tile walk
// (tile_walk.h), replayed on the tile (tile_replay.h). It decides nothing about what a tile holds
// (that is the walk's and the replay's, which sizing reads too); it writes the instructions:
// DMA runs and their HBM addresses, vector ops, matrix-engine row groups, stores, and places the
// tile's registers in its region. With a column split (column_split.h), a tile is rows
// [r0, r0 + rows) x columns [c0, c0 + cw) of the split nodes; the other nodes compute their
// whole row in every tile.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/tile_walk.h"
#include "isa/program.h"

namespace lpu {

class KernelEmitter {
 public:
  // `hbm`: each buffer's HBM base (a buffer not in it is at 0: sizes do not depend on it).
  // The walk and the map must outlive the emitter.
  KernelEmitter(const TileWalk& walk, int kernel_id, const std::map<std::string, uint64_t>& hbm);
  ~KernelEmitter();
  KernelEmitter(const KernelEmitter&) = delete;
  KernelEmitter& operator=(const KernelEmitter&) = delete;

  // Emits tile [r0, r0 + rows) x [c0, c0 + cw) with its registers allocated in
  // [base, base + limit). Returns the peak bytes the tile region used.
  int64_t emit_tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw, uint64_t base, uint64_t limit,
                    std::vector<Instruction>& out);
  // The row-invariant loads, emitted with the first tile: they live below the tile regions
  // (at the walk's hoisted offsets) and survive across tiles.
  const std::vector<Instruction>& hoisted_code() const;

  struct Impl;  // kernel_emitter.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lpu
