// One tile of a recorded walk (tile_walk.h): the registers the tile allocates and what each op
// makes of them on the tile's rows and column window. What depends on the tile is decided here,
// once for both readers of the walk: register shapes, the expands to a dense shape, which loads
// share a register (a window and a whole row of one access meet when the window is the row),
// and the checks of the tile's shapes. A sink turns the ops into what its reader needs:
// instructions (KernelEmitter, lpu_codegen.cpp) or register uses and HBM bytes
// (TileFootprintAnalysis, tile_footprint.cpp). A template, so sizing's sink inlines: plan_tiles
// replays many candidate tiles per kernel.
//
// The sink's hooks, called in the order the emitter emits (loads into their own sequence, the
// tile's DMAs go first; everything else in the body's order):
//   tile_load(l, dst, coff)        a tile load into new register dst ([1 or rows, ncols]) from
//                                  the window at element offset coff
//   block_load(l, dst, c0)         a two-level load of columns [c0, c0 + dst.cols) into dst
//   hoisted_load(l, v)             the first load of a resident row (every tile reaches it)
//   vxe_op(sop, dst, srcs, n)      vxe_reduce(rop, cols, dst, src)      vxe_mov(dst, src)
//   matmul(op, a, dst, c0)         matmul_gathered(op, a, idx, dst, c0)
//   gather(op, idx, dst, c0)       store(op, v, c0)
// where c0 is the first column the op computes (the tile's window for a split node, else 0).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/tile_plan.h"
#include "codegen/tile_walk.h"

namespace lpu {

[[noreturn]] void tile_replay_bug(const std::string& what);  // an InternalError (tile_walk.cpp)

// A value of the tile: an immediate, a resident row at an absolute address (vid < 0), or a view
// of tile register `vid`: [rows, cols] with strides in elements, from byte `addr` of it.
struct TileVal {
  bool imm = false;
  double value = 0;
  int vid = -1;
  uint64_t addr = 0;
  int64_t rows = 1, cols = 1;
  int64_t rs = 0, cs = 0;
  bool owned = false;  // dense result of an instruction of this node (not an alias)
};

// Rows [r0, r0 + rows) x columns [c0, c0 + cw) of the split nodes (cw unused without a split).
struct TileWindow {
  int64_t r0 = 0, rows = 0, c0 = 0, cw = 0;
};

class TileReplay {
 public:
  template <class Sink>
  void run(const TileWalk& w, const TileWindow& t, Sink& sink) {
    t_ = t;
    vals_.resize(w.ops.size());  // each op writes its value whole
    vsize_.clear();
    shared_.clear();
    for (size_t i = 0; i < w.ops.size(); ++i) {
      const TileWalk::Op& op = w.ops[i];
      TileVal& out = vals_[i];
      switch (op.kind) {
        case TileWalk::OpKind::Imm:
          out = TileVal{};
          out.imm = true;
          out.value = op.value;
          break;
        case TileWalk::OpKind::Load: out = load(w.loads[static_cast<size_t>(op.load)], sink); break;
        case TileWalk::OpKind::Call: out = call(op, sink); break;
        case TileWalk::OpKind::Reduce: out = reduce(op, sink); break;
        case TileWalk::OpKind::Matmul: out = matmul(op, sink); break;
        case TileWalk::OpKind::Gather: out = gather(op, sink); break;
        case TileWalk::OpKind::NodeEnd: out = op.join >= 0 ? join_part(op, sink) : node_end(op, sink); break;
        case TileWalk::OpKind::Join: out = alloc(t_.rows, op.cols); break;  // its parts write it
      }
    }
  }
  // The bytes of each register the last tile allocated, by vid.
  const std::vector<uint64_t>& register_bytes() const { return vsize_; }

 private:
  // Two loads of one tile share a register when their keys are equal: the recorded part and,
  // for tile loads, the columns and the window's element offset.
  struct LoadKey {
    int key;
    int64_t ncols, coff;
    bool operator==(const LoadKey& o) const { return key == o.key && ncols == o.ncols && coff == o.coff; }
  };
  TileWindow t_;
  std::vector<TileVal> vals_;  // by op
  std::vector<uint64_t> vsize_;
  std::vector<std::pair<LoadKey, TileVal>> shared_;  // a handful per tile: a scan beats a map

  const TileVal& in(const TileWalk::Op& op, size_t j) const { return vals_[static_cast<size_t>(op.in[j])]; }
  TileVal alloc(int64_t rows, int64_t cols) {
    TileVal v;
    v.vid = static_cast<int>(vsize_.size());
    vsize_.push_back(lm_register_bytes(rows, cols));
    v.rows = rows;
    v.cols = cols;
    v.rs = cols;
    v.cs = 1;
    v.owned = true;
    return v;
  }
  const TileVal* shared(const LoadKey& key) const {
    for (const auto& [k, v] : shared_)
      if (k == key) return &v;
    return nullptr;
  }
  // Copies a (possibly broadcast or immediate) value into a dense [rows, cols] register.
  template <class Sink>
  TileVal expand(const TileVal& v, int64_t rows, int64_t cols, Sink& sink) {
    TileVal dst = alloc(rows, cols);
    sink.vxe_mov(dst, v);
    return dst;
  }

  template <class Sink>
  TileVal load(const TileWalk::Load& l, Sink& sink) {
    const int64_t cw = l.window ? t_.cw : l.width, c0 = l.window ? t_.c0 : 0;
    const int64_t ncols = l.col_stride == 0 ? 1 : cw;
    switch (l.kind) {
      case TileWalk::LoadKind::InKernel: {  // the producer's register, at the access's offset
        TileVal v = vals_[static_cast<size_t>(l.producer)];
        v.addr += static_cast<uint64_t>(l.ap->base * kLmElem);
        v.cols = ncols;
        v.cs = l.col_stride;
        v.owned = false;
        return v;
      }
      case TileWalk::LoadKind::Hoisted: {
        TileVal v;
        v.addr = l.hoisted_addr;
        v.cols = l.hoisted_cols;
        v.cs = 1;
        if (l.hoisted_first) sink.hoisted_load(l, v);
        return v;
      }
      case TileWalk::LoadKind::TwoLevel: {  // a window starts and ends on block boundaries
        if (l.width % l.block != 0 || c0 % l.block != 0 || cw % l.block != 0)
          tile_replay_bug("column blocks do not tile the row in " + l.node->name);
        LoadKey key{l.key, -1, 0};
        if (const TileVal* v = shared(key)) return *v;
        TileVal v = alloc(t_.rows, cw);
        v.owned = false;
        sink.block_load(l, v, c0);
        shared_.push_back({key, v});
        return v;
      }
      case TileWalk::LoadKind::Tile: {
        LoadKey key{l.key, ncols, l.col_stride * c0};
        if (const TileVal* v = shared(key)) return *v;
        TileVal v = alloc(l.one_row ? 1 : t_.rows, ncols);
        v.owned = false;
        sink.tile_load(l, v, key.coff);
        shared_.push_back({key, v});
        return v;
      }
    }
    tile_replay_bug("unknown load kind");
  }

  // A vector op on the operands' broadcast shape; a division by a per-row value as a
  // reciprocal and a multiply (divides_by_row_value).
  template <class Sink>
  TileVal call(const TileWalk::Op& op, Sink& sink) {
    const TileVal* args[3] = {nullptr, nullptr, nullptr};
    size_t n = 0;
    int64_t rows = 1, cols = 1;
    for (; n < 3 && op.in[n] >= 0; ++n) {
      args[n] = &in(op, n);
      if (!args[n]->imm) {
        rows = std::max(rows, args[n]->rows);
        cols = std::max(cols, args[n]->cols);
      }
    }
    if (n == 2 && divides_by_row_value(op.sop, args[1]->imm, args[1]->cols, cols)) {
      TileVal r = alloc(args[1]->rows, args[1]->cols);
      sink.vxe_op(ScalarOp::reciprocal, r, &args[1], 1);
      const TileVal* mul[2] = {args[0], &r};
      TileVal dst = alloc(rows, cols);
      sink.vxe_op(ScalarOp::mul, dst, mul, 2);
      return dst;
    }
    TileVal dst = op.join >= 0 && rows == t_.rows && cols == op.node->out_cols() ? window(op) : alloc(rows, cols);
    sink.vxe_op(op.sop, dst, args, n);
    return dst;
  }

  // A reduction reads a dense [rows, row width] register.
  template <class Sink>
  TileVal reduce(const TileWalk::Op& op, Sink& sink) {
    TileVal v = in(op, 0);
    const int64_t width = op.node->cols();
    if (v.imm || v.cols != width || v.rows != t_.rows) v = expand(v, t_.rows, width, sink);
    TileVal dst = alloc(v.rows, 1);
    sink.vxe_reduce(op.rop, width, dst, v);
    return dst;
  }

  // Under column tiling a matmul computes the tile's window of N.
  template <class Sink>
  TileVal matmul(const TileWalk::Op& op, Sink& sink) {
    const int64_t N = op.split ? t_.cw : op.node->out_cols(), c0 = op.split ? t_.c0 : 0;
    if (op.gathered) {
      const TileVal& idx = in(op, 1);
      if (idx.imm || idx.cols != 1)
        tile_replay_bug("gathered-weight row indices of " + op.node->name + " are not one per row");
      TileVal dst = alloc(t_.rows, N);
      sink.matmul_gathered(op, in(op, 0), idx, dst, c0);
      return dst;
    }
    TileVal dst = alloc(t_.rows, N);
    sink.matmul(op, in(op, 0), dst, c0);
    return dst;
  }

  template <class Sink>
  TileVal gather(const TileWalk::Op& op, Sink& sink) {
    const int64_t D = op.split ? t_.cw : op.node->out_cols(), c0 = op.split ? t_.c0 : 0;
    const TileVal& idx = in(op, 0);
    TileVal dst = alloc(t_.rows, D);
    if (idx.cols != 1) tile_replay_bug("gather indices of " + op.node->name + " are not one per row");
    sink.gather(op, idx, dst, c0);
    return dst;
  }

  // The node's value, dense, and stored right after it is complete, so it can die early. A
  // node computing its whole row in every column tile stores it from the first one only.
  template <class Sink>
  TileVal node_end(const TileWalk::Op& op, Sink& sink) {
    const int64_t ncols = op.split ? t_.cw : op.node->out_cols(), c0 = op.split ? t_.c0 : 0;
    TileVal v = in(op, 0);
    // join -2: computed into a concatenation's window (tile_walk.h), which the part then holds.
    const bool in_window = op.join == -2 && v.rows == t_.rows && v.cols == ncols;
    if (!(v.owned && v.rows == t_.rows && v.cols == ncols) && !in_window) v = expand(v, t_.rows, ncols, sink);
    if (op.store && (op.split || t_.c0 == 0)) sink.store(op, v, c0);
    return v;
  }

  // A part of a concatenation: its value in its column window of the joined register, computed
  // there (the window as the vector op's destination, call above) or moved there (a vxe.mov with
  // the joined row as its destination row stride); stored from a dense register of its own where
  // it also goes to HBM. Column tiling never splits a kernel with a join (column_split.cpp).
  TileVal window(const TileWalk::Op& op) const {
    TileVal w = vals_[static_cast<size_t>(op.join)];
    w.addr += static_cast<uint64_t>(op.join_col * kLmElem);
    w.cols = op.node->out_cols();
    w.owned = false;
    return w;
  }
  template <class Sink>
  TileVal join_part(const TileWalk::Op& op, Sink& sink) {
    const int64_t ncols = op.node->out_cols();
    TileVal v = in(op, 0);
    const TileVal w = window(op);
    if (!(v.vid == w.vid && v.addr == w.addr && v.rows == w.rows && v.cols == w.cols)) sink.vxe_mov(w, v);
    if (op.store) {
      if (!(v.owned && v.rows == t_.rows && v.cols == ncols)) v = expand(v, t_.rows, ncols, sink);
      sink.store(op, v, 0);
    }
    return v;
  }
};

}  // namespace lpu
