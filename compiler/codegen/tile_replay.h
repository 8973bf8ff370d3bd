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
//   vxe_op(sop, dst, srcs, n, chain)  vxe_reduce(rop, cols, dst, src)   vxe_mov(dst, src)
//   matmul(op, a, dst, c0)         matmul_gathered(op, a, idx, dst, c0)
//   gather(op, idx, dst, c0)       store(op, v, c0)
// where c0 is the first column the op computes (the tile's window for a split node, else 0),
// and `chain` the post op and row reduction a vector op applies in the same instruction
// (TileWalk::Op::post_of, acc): the first op of a chain emits nothing where it is recorded; its
// value is `deferred` until its reader, the post op, emits the one instruction, or until any
// other use (a shape the chain cannot take) emits it on its own there.
#pragma once
#include <cstdint>
#include <optional>
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
  int deferred = -1;   // the Call computing it, not emitted yet (a chain's first op)
};

// What a vector op applies in the same instruction besides its own op (docs/isa.md).
struct VxeChain {
  std::optional<ScalarOp> post;
  std::optional<ReductionType> acc;
  TileVal acc_dst;  // the [rows, 1] register of the row reduction
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
    w_ = &w;
    vals_.resize(w.ops.size());  // each op writes its value whole
    acc_done_.assign(w.ops.size(), false);
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
        case TileWalk::OpKind::Call: out = call(i, sink); break;
        case TileWalk::OpKind::Reduce:
          if (!acc_done_[i]) out = reduce(op, sink);  // else its value came with its operand's
          break;
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
  const TileWalk* w_ = nullptr;
  std::vector<TileVal> vals_;   // by op
  std::vector<bool> acc_done_;  // by op: a Reduce its operand's instruction computed
  std::vector<uint64_t> vsize_;
  std::vector<std::pair<LoadKey, TileVal>> shared_;  // a handful per tile: a scan beats a map

  const TileVal& in(const TileWalk::Op& op, size_t j) const { return vals_[static_cast<size_t>(op.in[j])]; }
  // Operand j of `op`, its instruction emitted here if it was deferred (a use no chain covers).
  template <class Sink>
  TileVal arg(const TileWalk::Op& op, size_t j, Sink& sink) {
    const TileVal& v = in(op, j);
    return v.deferred < 0 ? v : emit_call(static_cast<size_t>(v.deferred), {}, sink);
  }
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
        if (v.deferred >= 0 && !(l.ap->base == 0 && (l.col_stride == 1 || ncols == 1) && ncols == v.cols))
          v = emit_call(static_cast<size_t>(v.deferred), {}, sink);  // a view, not the value itself
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

  // The operands of Call `op` (a chain's post op: of its first op) and their broadcast shape.
  struct CallArgs {
    TileVal v[3];
    size_t n = 0;
    int64_t rows = 1, cols = 1;
    void add(const TileVal& x) {
      v[n++] = x;
      if (!x.imm) {
        rows = std::max(rows, x.rows);
        cols = std::max(cols, x.cols);
      }
    }
  };
  template <class Sink>
  CallArgs call_args(const TileWalk::Op& op, Sink& sink) {
    CallArgs a;
    while (a.n < 3 && op.in[a.n] >= 0) a.add(arg(op, a.n, sink));
    return a;
  }
  static bool by_row_value(const TileWalk::Op& op, const CallArgs& a) {
    return a.n == 2 && divides_by_row_value(op.sop, a.v[1].imm, a.v[1].cols, a.cols);
  }

  // Call i: deferred when it starts a chain (its reader emits it), else emitted with the chain
  // it ends (its operand deferred) and the row reduction it carries where the tile allows:
  // its result a whole [rows, width] tile of the reduction.
  template <class Sink>
  TileVal call(size_t i, Sink& sink) {
    const TileWalk::Op& op = w_->ops[i];
    if (op.post_of >= 0) {
      CallArgs a;  // the shape only: nothing is emitted for it here
      bool plain = true;
      while (a.n < 3 && op.in[a.n] >= 0) {
        plain = plain && in(op, a.n).deferred < 0;
        a.add(in(op, a.n));
      }
      if (plain && !by_row_value(op, a)) {
        TileVal d;
        d.deferred = static_cast<int>(i);
        d.rows = a.rows;
        d.cols = a.cols;
        d.rs = a.cols;
        d.cs = 1;
        d.owned = true;
        return d;
      }
    }
    VxeChain chain;
    const TileVal& first = in(op, 0);
    if (first.deferred >= 0 && scalar_op_arity(op.sop) == 1) {  // this op ends the chain
      chain.post = op.sop;
      return emit_call(static_cast<size_t>(first.deferred), chain, sink, &op);
    }
    return emit_call(i, chain, sink);
  }
  // The instruction of Call i (with `chain.post` applied: `last`, the post op, owns the result).
  // A division by a per-row value is a reciprocal and a multiply (divides_by_row_value).
  template <class Sink>
  TileVal emit_call(size_t i, VxeChain chain, Sink& sink, const TileWalk::Op* last = nullptr) {
    const TileWalk::Op& op = w_->ops[i];
    const TileWalk::Op& out_op = last ? *last : op;
    const CallArgs a = call_args(op, sink);
    const TileVal* p[3] = {&a.v[0], &a.v[1], &a.v[2]};  // the sinks' operand list
    if (by_row_value(op, a)) {
      TileVal r = alloc(a.v[1].rows, a.v[1].cols);
      sink.vxe_op(ScalarOp::reciprocal, r, &p[1], 1, VxeChain{});
      const TileVal* mul[2] = {p[0], &r};
      TileVal dst = alloc(a.rows, a.cols);
      sink.vxe_op(ScalarOp::mul, dst, mul, 2, VxeChain{});
      return dst;
    }
    TileVal dst = out_op.join >= 0 && a.rows == t_.rows && a.cols == out_op.node->out_cols() ? window(out_op)
                                                                                             : alloc(a.rows, a.cols);
    if (out_op.acc >= 0) {
      const TileWalk::Op& red = w_->ops[static_cast<size_t>(out_op.acc)];
      if (out_op.join < 0 && dst.rows == t_.rows && dst.cols == red.node->cols()) {
        chain.acc = red.rop;
        chain.acc_dst = alloc(dst.rows, 1);
        vals_[static_cast<size_t>(out_op.acc)] = chain.acc_dst;
        acc_done_[static_cast<size_t>(out_op.acc)] = true;
      }
    }
    sink.vxe_op(op.sop, dst, p, a.n, chain);
    return dst;
  }

  // A reduction reads a dense [rows, row width] register.
  template <class Sink>
  TileVal reduce(const TileWalk::Op& op, Sink& sink) {
    TileVal v = arg(op, 0, sink);
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
      const TileVal idx = arg(op, 1, sink);
      if (idx.imm || idx.cols != 1)
        tile_replay_bug("gathered-weight row indices of " + op.node->name + " are not one per row");
      TileVal dst = alloc(t_.rows, N);
      sink.matmul_gathered(op, arg(op, 0, sink), idx, dst, c0);
      return dst;
    }
    TileVal dst = alloc(t_.rows, N);
    sink.matmul(op, arg(op, 0, sink), dst, c0);
    return dst;
  }

  template <class Sink>
  TileVal gather(const TileWalk::Op& op, Sink& sink) {
    const int64_t D = op.split ? t_.cw : op.node->out_cols(), c0 = op.split ? t_.c0 : 0;
    const TileVal idx = arg(op, 0, sink);
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
    if (v.deferred >= 0) {  // a chain's first op passes on to the next node, or is emitted here
      if (!op.store && !op.split && op.join == -1 && v.rows == t_.rows && v.cols == ncols) return v;
      v = arg(op, 0, sink);
    }
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
    TileVal v = arg(op, 0, sink);
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
