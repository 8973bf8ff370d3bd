#include "codegen/collective.h"

#include <algorithm>

#include "codegen/tile_plan.h"
#include "graph/collective.h"
#include "support/error.h"

namespace lpu {

namespace {

// A collective's operand as [rows, cols] per rank: all_gather concatenates along dim, so rows
// are the dims before it and rank r's columns its extent times the dims after it; all_reduce
// sums element-wise, so rows are all but the last dim.
struct View {
  CollectiveAttrs a;
  int64_t rows = 1, inner = 1;
  int64_t cols(int64_t r) const { return a.sizes.empty() ? inner : a.sizes[static_cast<size_t>(r)] * inner; }
  int64_t full_cols() const { return a.sizes.empty() ? inner : a.offset(a.group) * inner; }
  int64_t col_offset(int64_t r) const { return a.sizes.empty() ? 0 : a.offset(r) * inner; }
};

View view_of(const LoopProgram& p, const LoopNode& n) {
  if (n.host_inputs.size() != 1) throw InternalError(strcat("codegen: collective ", n.name, " without one operand"));
  const Buffer& in = p.buffers.at(n.host_inputs[0]);
  Node g;  // the attributes' checks need a node
  g.name = n.origin;
  g.op = n.host_op;
  g.attrs = n.host_attrs;
  View v;
  v.a = collective_attrs(g, in.type.shape);
  const Shape& s = in.type.shape;
  // all_gather: rows before dim, inner after it; all_reduce: rows before the last dim, inner it.
  const bool gather = n.host_op == "all_gather";
  size_t split = gather ? static_cast<size_t>(v.a.dim) : (s.empty() ? 0 : s.size() - 1);
  for (size_t d = 0; d < s.size(); ++d)
    if (d < split)
      v.rows *= s[d];
    else if (d > split || !gather)
      v.inner *= s[d];
  return v;
}

}  // namespace

CollectivePlacement place_collectives(const LoopProgram& p, uint64_t lm_base, int64_t lmu_bytes) {
  CollectivePlacement c;
  c.lm_base = lm_base;
  int64_t widest_row = 0;
  for (const auto& n : p.nodes) {
    if (n.kind != LoopKind::Collective) continue;
    View v = view_of(p, n);
    for (int64_t r = 0; r < v.a.group; ++r) {
      c.slot_bytes = std::max(c.slot_bytes, align_up(v.rows * v.cols(r) * 4, kLmAlign));
      widest_row = std::max(widest_row, v.rows * 4);
    }
    c.group = std::max(c.group, v.a.group);
  }
  if (!c.group) return c;
  // At most a quarter of local memory; a larger operand goes in rounds (a slot holds at least
  // one column of every row).
  int64_t budget = (lmu_bytes / 4 / (2 * (c.group + 1))) / kLmAlign * kLmAlign;
  c.slot_bytes = std::max(std::min(c.slot_bytes, budget), align_up(widest_row, kLmAlign));
  return c;
}

namespace {

// The code of one collective: the cuts of every rank's columns into rounds and chunks, and the
// instructions of each step (the header's 1-3).
class CollectiveEmitter {
 public:
  CollectiveEmitter(const LoopProgram& p, const LoopNode& n, int kernel, int64_t seq, uint64_t in_addr,
                    uint64_t out_addr, const CollectivePlacement& place)
      : v_(view_of(p, n)),
        N_(v_.a.group),
        me_(v_.a.rank),
        R_(v_.rows),
        reduce_(n.host_op == "all_reduce"),
        in_dt_(p.buffers.at(n.host_inputs[0]).type.dtype),
        out_dt_(p.buffers.at(n.out()).type.dtype),
        kernel_(kernel),
        seq_(seq),
        in_addr_(in_addr),
        out_addr_(out_addr),
        slot_(place.slot_bytes),
        half_(place.lm_base + static_cast<uint64_t>((seq % 2) * (N_ + 1) * slot_)),
        credit_(1 + 2 * place.chunks) {
    // Rounds: a rank's columns in J parts that fit a slot (J = 1 unless the operand is larger
    // than the slot); each round in K chunks. Every rank computes the same cuts from sizes.
    int64_t widest = 0;
    for (int64_t s = 0; s < N_; ++s) widest = std::max(widest, v_.cols(s));
    const int64_t per_slot = std::max<int64_t>(1, slot_ / (4 * R_));  // columns of R rows a slot holds
    J_ = (widest + per_slot - 1) / per_slot;
    K_ = std::max<int64_t>(1, std::min<int64_t>(place.chunks, (widest / J_) / 64));
  }

  std::vector<Instruction> emit() {
    for (int64_t j = 0; j < J_; ++j) {
      if (j > 0) slots_free_barrier();
      load_own(j);
      // Chunk k+1 on the link while chunk k is summed and stored.
      sends(j, 0);
      for (int64_t k = 1; k < K_; ++k) {
        sends(j, k);
        finish(j, k - 1);
      }
      finish(j, K_ - 1);
    }
    return std::move(out_);
  }

 private:
  const View v_;
  const int64_t N_, me_, R_;
  const bool reduce_;
  const DType in_dt_, out_dt_;
  const int kernel_;
  const int64_t seq_;
  const uint64_t in_addr_, out_addr_;
  const int64_t slot_;
  const uint64_t half_;
  const int64_t credit_;  // between rounds: "my slots are free again"
  int64_t J_ = 1, K_ = 1;
  std::vector<Instruction> out_;

  uint64_t slot_addr(int64_t s) const { return half_ + static_cast<uint64_t>(s * slot_); }
  int64_t round_lo(int64_t s, int64_t j) const { return j * v_.cols(s) / J_; }
  // Chunk k of round j of rank s: columns [cut(s, j, k), cut(s, j, k + 1)), stored dense
  // ([R, width]) at its slot + R * (its start - the round's start) elements.
  int64_t cut(int64_t s, int64_t j, int64_t k) const {
    int64_t lo = round_lo(s, j), hi = round_lo(s, j + 1);
    return lo + k * (hi - lo) / K_;
  }
  uint64_t chunk_addr(int64_t s, int64_t j, int64_t k) const {
    return slot_addr(s) + static_cast<uint64_t>(R_ * (cut(s, j, k) - round_lo(s, j)) * 4);
  }
  int64_t token(int64_t k) const { return 1 + (seq_ % 2) * K_ + k; }
  Instruction base(Opcode op, int64_t rows, int64_t cols) const {
    Instruction in;
    in.opcode = op;
    in.rows = rows;
    in.cols = cols;
    in.kernel = kernel_;
    return in;
  }
  static Operand lm(uint64_t addr, int64_t rs) {
    Operand o;
    o.addr = addr;
    o.rs = rs;
    o.cs = 1;
    return o;
  }

  // Every peer has stored the last round out of its slots.
  void slots_free_barrier() {
    for (int64_t q = 1; q < N_; ++q) {
      Instruction sig = base(Opcode::SyncSignal, 0, 0);
      sig.token = credit_;
      sig.peer = (me_ + q) % N_;
      out_.push_back(sig);
    }
    for (int64_t q = 1; q < N_; ++q) {
      Instruction w = base(Opcode::SyncWait, 0, 0);
      w.token = credit_;
      out_.push_back(w);
    }
  }

  // 1. Own chunks into this rank's slot.
  void load_own(int64_t j) {
    for (int64_t k = 0; k < K_; ++k) {
      int64_t c0 = cut(me_, j, k), w = cut(me_, j, k + 1) - c0;
      Instruction in = base(Opcode::DmaLoad, R_, w);
      in.dtype = in_dt_;
      in.lm_addr = chunk_addr(me_, j, k);
      in.hbm_addr = in_addr_ + static_cast<uint64_t>(c0 * dtype_bytes(in_dt_));
      in.hbm_rs = v_.cols(me_);
      in.hbm_cs = 1;
      out_.push_back(in);
    }
  }

  // 2. Chunk k to every peer, from the next rank on (the ranks do not all send to one first).
  void sends(int64_t j, int64_t k) {
    int64_t w = cut(me_, j, k + 1) - cut(me_, j, k);
    for (int64_t q = 1; q < N_; ++q) {
      Instruction in = base(Opcode::EslSend, R_, w);
      in.peer = (me_ + q) % N_;
      in.lm_addr = chunk_addr(me_, j, k);
      in.srcs = {lm(chunk_addr(me_, j, k), w)};
      in.token = token(k);
      out_.push_back(in);
    }
  }

  // 3. Chunk k from every peer: summed in rank order into the accumulator (slot N) and
  // stored (all_reduce), or every slot's chunk stored at its place (all_gather).
  void finish(int64_t j, int64_t k) {
    for (int64_t q = 1; q < N_; ++q) {
      Instruction in = base(Opcode::SyncWait, 0, 0);
      in.token = token(k);
      out_.push_back(in);
    }
    if (reduce_) {
      sum_and_store(j, k);
      return;
    }
    for (int64_t s = 0; s < N_; ++s) {
      int64_t c0 = cut(s, j, k);
      store(chunk_addr(s, j, k), v_.col_offset(s) + c0, cut(s, j, k + 1) - c0);
    }
  }

  void sum_and_store(int64_t j, int64_t k) {
    int64_t c0 = cut(0, j, k), w = cut(0, j, k + 1) - c0;
    uint64_t acc = slot_addr(N_) + static_cast<uint64_t>(R_ * (c0 - round_lo(0, j)) * 4);
    for (int64_t s = 1; s < N_; ++s) {
      Instruction in = base(Opcode::VxeOp, R_, w);
      in.vop = ScalarOp::add;
      in.lm_addr = acc;
      in.srcs = {lm(s == 1 ? chunk_addr(0, j, k) : acc, w), lm(chunk_addr(s, j, k), w)};
      out_.push_back(in);
    }
    store(acc, c0, w);
  }

  // R rows of `w` columns from local memory to the output's columns from `col`.
  void store(uint64_t lm_addr, int64_t col, int64_t w) {
    Instruction st = base(Opcode::DmaStore, R_, w);
    st.dtype = out_dt_;
    st.lm_addr = lm_addr;
    st.hbm_addr = out_addr_ + static_cast<uint64_t>(col * dtype_bytes(out_dt_));
    st.hbm_rs = v_.full_cols();
    st.hbm_cs = 1;
    out_.push_back(st);
  }
};

}  // namespace

std::vector<Instruction> emit_collective(const LoopProgram& p, const LoopNode& n, int kernel, int64_t seq,
                                         uint64_t in_addr, uint64_t out_addr, const CollectivePlacement& place) {
  return CollectiveEmitter(p, n, kernel, seq, in_addr, out_addr, place).emit();
}

}  // namespace lpu
