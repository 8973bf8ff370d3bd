// A kernel's tile walk, recorded once: what one tile of the kernel computes, in the order the
// emitter emits it, with every decision that does not depend on the tile taken here. For each
// node in order: its loads, each classified (an alias of a register produced in the kernel, a
// two-level block load, a row-invariant load that stays resident below the tile regions, or a
// tile load, keyed so that equal loads share a register); its constants (folded), vector ops
// and reduction, or its matmul or gather; then the node's result and its store.
//
// Two readers consume the same record, so they cannot disagree on what a tile holds:
//   - KernelEmitter (lpu_codegen.cpp) emits each tile from it;
//   - TileFootprintAnalysis (tile_footprint.h) sizes candidate tiles from it, for every tiling
//     plan_tiles considers, so a replay must stay cheap (tens of ops, no loop-IR walk).
// What depends on the tile (register shapes, expands, which loads share a register when column
// windows meet, the per-tile checks) is decided by the replay both share (tile_replay.h).
//
// Recording throws the input errors of a kernel the emitter cannot emit (a load that is not a
// strided access, an index used as a value, a matmul A that does not vary along K, a matmul B
// that is not strided in K and N), in the walk's order, so the scheduler (sizing) and the user
// (emitting) see the same error. Checks of emitting alone stay with the emitter: HBM bounds
// (InternalError) and packed weights read other than by the SXE, which sizing must not refuse
// (an elided gather of a packed table is sized but never emitted: gathered_weights.h).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/column_split.h"
#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

struct GatheredWeights;  // codegen/gathered_weights.h

constexpr int64_t kLmElem = 4;  // local memory holds fp32

// The access analyses of one program's loads and stores and its nodes' body walks, shared by
// the walks of every kernel made of its nodes (the scheduler sizes many candidate kernels of
// the same nodes). Keyed by node and expression: use one only with the program it was filled
// from, while that program lives unchanged. A TileWalk points into it: it must outlive them.
class TileAccessCache {
 public:
  // `vector_chains`: the walks recorded from this cache mark chains (TileWalk::Op::post_of,
  // acc), as the VXE runs them (CodegenOptions::vector_chains).
  explicit TileAccessCache(bool vector_chains = true);
  ~TileAccessCache();
  TileAccessCache(const TileAccessCache&) = delete;
  TileAccessCache& operator=(const TileAccessCache&) = delete;

  struct Impl;  // tile_walk.cpp

 private:
  friend struct TileWalk;
  std::unique_ptr<Impl> impl_;
};

struct TileWalk {
  // One op per value the walk makes: the handler calls on each node's body (each shared
  // subexpression once), a matmul or gather, then the node's result (NodeEnd). A buffer that
  // several nodes of the kernel write as column windows of its rows (a concatenation) and a node
  // of it reads is one register, a Join, recorded before its first writer: a writer whose value
  // is a vector op of its own computes it into its window, any other's NodeEnd moves its value
  // there, and readers alias the Join.
  enum class OpKind : uint8_t { Imm, Load, Call, Reduce, Matmul, Gather, NodeEnd, Join };
  // What a load is (the emitter's cases, in its order of preference).
  enum class LoadKind : uint8_t { InKernel, TwoLevel, Hoisted, Tile };

  struct Load {
    LoadKind kind = LoadKind::Tile;
    bool window = false;  // a split node's load: the tile's column window
    int64_t width = 0;    // columns of the access
    int64_t col_stride = 0;
    int64_t block = 0;           // TwoLevel: columns per block
    bool one_row = false;        // Tile: a row-invariant window, one row broadcast to all
    int producer = -1;           // InKernel: the NodeEnd op of the producing node
    int key = -1;                // TwoLevel, Tile: the load's key without its per-tile parts
    int64_t eb = 0;              // element bytes in HBM
    int64_t hoisted_cols = 0;    // Hoisted: columns of the resident row
    uint64_t hoisted_addr = 0;   // Hoisted: byte offset in the resident area
    bool hoisted_first = false;  // Hoisted: the first load of its key (the one that loads it)
    const LoopNode* node = nullptr;
    const ExprNode* expr = nullptr;
    const AccessPattern* ap = nullptr;
    const Buffer* buf = nullptr;  // not InKernel: the buffer in HBM
  };

  // A matmul's B operand streamed from HBM: element (k, n) of row rho's matrix at
  // rows_of_b.row_offset(rho) + ks * k + ns * n.
  struct MatmulB {
    int64_t K = 0, eb = 0;
    int64_t ks = 0, ns = 0;
    AccessPattern rows_of_b;  // row_offset() evaluates B's row part per flattened row
    const Buffer* buf = nullptr;
    const ExprNode* b = nullptr;  // B's load
  };

  struct Op {
    OpKind kind = OpKind::Imm;
    ScalarOp sop = ScalarOp::add;               // Call
    ReductionType rop = ReductionType::sum;     // Reduce
    std::array<int, 3> in{-1, -1, -1};          // operand ops (Call: its arguments; Reduce,
                                                // NodeEnd: the value; Matmul: the A operand
                                                // and, gathered, its row indices; Gather: the
                                                // indices)
    double value = 0;                           // Imm
    int load = -1;                              // Load: index into loads
    const LoopNode* node = nullptr;             // Reduce, Matmul, Gather, NodeEnd
    bool split = false;                         // Matmul, Gather, NodeEnd: a column window
    bool store = false;                         // NodeEnd: the node's value goes to HBM
    int64_t block = 0;                          // NodeEnd: two-level store columns (0: one level)
    int64_t eb = 0;                             // element bytes: Gather: the table's, NodeEnd: the
                                                // output's, gathered Matmul: B's
    const MatmulB* matmul = nullptr;            // Matmul (not gathered)
    const GatheredWeights* gathered = nullptr;  // Matmul: sxe.gemm_gather of an elided gather
    const Buffer* buf = nullptr;                // Gather, gathered Matmul: the table; NodeEnd:
                                                // the output
    const AccessPattern* store_ap = nullptr;    // NodeEnd with a store
    int join = -1;                              // NodeEnd of a concatenation's part, and the Call
                                                // computing it: the Join op (-2: the NodeEnd of a
                                                // node computed into a part's window)
    int64_t join_col = 0;                       // ... and the first column of its window
    int64_t cols = 0;                           // Join: the columns of the joined row
    // Chains (the VXE's `vxe.OP.POST ... => rRED`, docs/isa.md): one instruction for what would
    // be two or three passes over a tile, e.g. softmax's exp(x - max) and its row sum.
    int post_of = -1;  // Call: the unary Call that is this value's one reader, applied in the
                       // same instruction (this op then emits nothing of its own)
    int acc = -1;      // Call: a Reduce of this value, computed by the same instruction
  };

  std::vector<Op> ops;
  std::vector<Load> loads;
  // Row-invariant loads, resident below the tile regions: local-memory bytes (each aligned to
  // the allocation granule) and the HBM bytes loading them once moves.
  int64_t hoisted_bytes = 0, hoisted_hbm_bytes = 0;

  // Records kernel `k` of `p`; `columns`: its column split when tiles are column windows (else
  // whole rows), and marks its chains (Op::post_of, Op::acc). Throws the kernel's input errors
  // (above).
  static TileWalk record(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, TileAccessCache& cache);
};

}  // namespace lpu
