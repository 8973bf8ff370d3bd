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
    if (n.kind != LoopKind::Host || !is_collective_op(n.host_op)) continue;
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

std::vector<Instruction> emit_collective(const LoopProgram& p, const LoopNode& n, int kernel, int64_t seq,
                                         uint64_t in_addr, uint64_t out_addr, const CollectivePlacement& place) {
  const View v = view_of(p, n);
  const int64_t N = v.a.group, me = v.a.rank, R = v.rows;
  const bool reduce = n.host_op == "all_reduce";
  const DType in_dt = p.buffers.at(n.host_inputs[0]).type.dtype, out_dt = p.buffers.at(n.out()).type.dtype;
  const int64_t in_eb = dtype_bytes(in_dt), out_eb = dtype_bytes(out_dt);
  const int64_t slot = place.slot_bytes;
  const uint64_t half = place.lm_base + static_cast<uint64_t>((seq % 2) * (N + 1) * slot);
  auto slot_addr = [&](int64_t s) { return half + static_cast<uint64_t>(s * slot); };
  // Rounds: a rank's columns in J parts that fit a slot (J = 1 unless the operand is larger
  // than the slot); each round in K chunks. Every rank computes the same cuts from sizes.
  int64_t widest = 0;
  for (int64_t s = 0; s < N; ++s) widest = std::max(widest, v.cols(s));
  const int64_t per_slot = std::max<int64_t>(1, slot / (4 * R));  // columns of R rows a slot holds
  const int64_t J = (widest + per_slot - 1) / per_slot;
  auto round_lo = [&](int64_t s, int64_t j) { return j * v.cols(s) / J; };
  const int64_t K = std::max<int64_t>(1, std::min<int64_t>(place.chunks, (widest / J) / 64));
  // Chunk k of round j of rank s: columns [cut(s, j, k), cut(s, j, k + 1)), stored dense
  // ([R, width]) at its slot + R * (its start - the round's start) elements.
  auto cut = [&](int64_t s, int64_t j, int64_t k) {
    int64_t lo = round_lo(s, j), hi = round_lo(s, j + 1);
    return lo + k * (hi - lo) / K;
  };
  auto chunk_addr = [&](int64_t s, int64_t j, int64_t k) {
    return slot_addr(s) + static_cast<uint64_t>(R * (cut(s, j, k) - round_lo(s, j)) * 4);
  };
  auto token = [&](int64_t k) { return 1 + (seq % 2) * K + k; };
  const int64_t credit = 1 + 2 * place.chunks;  // between rounds: "my slots are free again"
  std::vector<Instruction> out;
  auto base = [&](Opcode op, int64_t rows, int64_t cols) {
    Instruction in;
    in.opcode = op;
    in.rows = rows;
    in.cols = cols;
    in.kernel = kernel;
    return in;
  };
  auto lm = [](uint64_t addr, int64_t rs) {
    Operand o;
    o.addr = addr;
    o.rs = rs;
    o.cs = 1;
    return o;
  };
  for (int64_t j = 0; j < J; ++j) {
    if (j > 0) {  // every peer has stored the last round out of its slots
      for (int64_t q = 1; q < N; ++q) {
        Instruction sig = base(Opcode::SyncSignal, 0, 0);
        sig.token = credit;
        sig.peer = (me + q) % N;
        out.push_back(sig);
      }
      for (int64_t q = 1; q < N; ++q) {
        Instruction w = base(Opcode::SyncWait, 0, 0);
        w.token = credit;
        out.push_back(w);
      }
    }
    // 1. Own chunks into this rank's slot.
    for (int64_t k = 0; k < K; ++k) {
      int64_t c0 = cut(me, j, k), w = cut(me, j, k + 1) - c0;
      Instruction in = base(Opcode::DmaLoad, R, w);
      in.dtype = in_dt;
      in.lm_addr = chunk_addr(me, j, k);
      in.hbm_addr = in_addr + static_cast<uint64_t>(c0 * in_eb);
      in.hbm_rs = v.cols(me);
      in.hbm_cs = 1;
      out.push_back(in);
    }
    // 2. Chunk k to every peer, from the next rank on (the ranks do not all send to one first).
    auto sends = [&](int64_t k) {
      int64_t w = cut(me, j, k + 1) - cut(me, j, k);
      for (int64_t q = 1; q < N; ++q) {
        Instruction in = base(Opcode::EslSend, R, w);
        in.peer = (me + q) % N;
        in.lm_addr = chunk_addr(me, j, k);
        in.srcs = {lm(chunk_addr(me, j, k), w)};
        in.token = token(k);
        out.push_back(in);
      }
    };
    // 3. Chunk k from every peer: summed in rank order into the accumulator (slot N) and
    // stored (all_reduce), or every slot's chunk stored at its place (all_gather).
    auto finish = [&](int64_t k) {
      for (int64_t q = 1; q < N; ++q) {
        Instruction in = base(Opcode::SyncWait, 0, 0);
        in.token = token(k);
        out.push_back(in);
      }
      if (reduce) {
        int64_t c0 = cut(0, j, k), w = cut(0, j, k + 1) - c0;
        uint64_t acc = slot_addr(N) + static_cast<uint64_t>(R * (c0 - round_lo(0, j)) * 4);
        for (int64_t s = 1; s < N; ++s) {
          Instruction in = base(Opcode::VxeOp, R, w);
          in.vop = ScalarOp::add;
          in.lm_addr = acc;
          in.srcs = {lm(s == 1 ? chunk_addr(0, j, k) : acc, w), lm(chunk_addr(s, j, k), w)};
          out.push_back(in);
        }
        Instruction st = base(Opcode::DmaStore, R, w);
        st.dtype = out_dt;
        st.lm_addr = acc;
        st.hbm_addr = out_addr + static_cast<uint64_t>(c0 * out_eb);
        st.hbm_rs = v.full_cols();
        st.hbm_cs = 1;
        out.push_back(st);
        return;
      }
      for (int64_t s = 0; s < N; ++s) {
        int64_t c0 = cut(s, j, k), w = cut(s, j, k + 1) - c0;
        Instruction st = base(Opcode::DmaStore, R, w);
        st.dtype = out_dt;
        st.lm_addr = chunk_addr(s, j, k);
        st.hbm_addr = out_addr + static_cast<uint64_t>((v.col_offset(s) + c0) * out_eb);
        st.hbm_rs = v.full_cols();
        st.hbm_cs = 1;
        out.push_back(st);
      }
    };
    // Chunk k+1 on the link while chunk k is summed and stored.
    sends(0);
    for (int64_t k = 1; k < K; ++k) {
      sends(k);
      finish(k - 1);
    }
    finish(K - 1);
  }
  return out;
}

}  // namespace lpu
