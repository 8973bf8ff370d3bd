// What an instruction reads, writes and does, from its opcode's row in the opcode table
// (isa/opcodes.h: ROLES, WORK, ARITH): one place for the simulator's scoreboard, its memory
// bounds check, its engines' statistics and the job reports' rooflines.
#pragma once
#include <cstdint>

#include "isa/program.h"

namespace lpu {

// One operand as an engine walks it: element (r, c) of a [rows, cols] tile lies at byte
// addr + (r * rs + c * cs) * elem_bytes, and the address moves by `step` bytes per iteration
// of the innermost enclosing loop (the ISU's expansion).
struct OperandAccess {
  enum class Memory : uint8_t { Lmu, Hbm, RemoteLmu };  // RemoteLmu: the receiver's, of the same size
  Memory memory;
  bool write;
  const char* role;  // as messages name it ("destination", "weights B", ...)
  uint64_t addr;
  int64_t rows, cols, rs, cs, elem_bytes, step;
  Quant quant;  // weights B stored packed: elements lie in quant's blocks from addr (elem_bytes unused)
};

// The bytes [lo, hi) of a packed operand's elements at element offsets [first, last] from its
// address (first >= 0: packed operands have non-negative strides): their whole blocks.
inline void packed_span(const Quant& q, int64_t first, int64_t last, int64_t& lo, int64_t& hi) {
  lo = q.block_offset(first);
  hi = q.block_offset(last) + q.block_bytes();
}

namespace detail {
// lm_addr as [rows, cols], rows `rs` elements apart (dense: rs = cols).
inline OperandAccess lm_tile(bool write, const char* role, const Instruction& in, int64_t cols, int64_t rs) {
  return {OperandAccess::Memory::Lmu, write, role, in.lm_addr, in.rows, cols, rs, 1, 4, in.lm_step, Quant{}};
}
inline OperandAccess lm_operand(const char* role, const Operand& o, const Instruction& in, int64_t rows, int64_t cols) {
  return {OperandAccess::Memory::Lmu, false, role, o.addr, rows, cols, o.rs, o.cs, 4, in.lm_step, Quant{}};
}
inline OperandAccess hbm(bool write, const char* role, const Instruction& in, int64_t rows, int64_t cols, int64_t rs,
                         int64_t cs, Quant q = {}) {
  return {OperandAccess::Memory::Hbm, write,       role, in.hbm_addr, rows, cols, rs, cs,
          dtype_bytes(in.dtype),      in.hbm_step, q};
}
}  // namespace detail

// Calls f(const OperandAccess&) for every memory operand of `in`, in the order of its roles
// (role::HostBuffers aside: whole buffers of the program, which the caller resolves), a
// vxe.<op> chain's row reduction (Instruction::acc, not a role of the opcode: an optional
// field) right after the destination: a second destination, the dense [R, 1] column at
// acc_addr, stepped like every local-memory operand. Immediate sources are not memory operands.
template <typename F>
void for_each_operand(const Instruction& in, F&& f) {
  using detail::hbm;
  using detail::lm_operand;
  using detail::lm_tile;
  const Role roles = opcode_info(in.opcode).roles;
  const int64_t R = in.rows, C = in.cols;
  if (roles & role::LmDestTile) f(lm_tile(true, "destination", in, C, in.lm_row_stride()));
  if (in.acc)
    f(OperandAccess{OperandAccess::Memory::Lmu, true, "row reduction", in.acc_addr, R, 1, 1, 1, 4, in.lm_step,
                    Quant{}});
  if (roles & role::LmDestColumn) f(lm_tile(true, "destination", in, 1, 1));
  if (roles & role::LmSrcTile) f(lm_tile(false, "source", in, C, C));
  if (roles & role::LmSources) {
    static const char* const kSources[] = {"source 1", "source 2", "source 3"};
    for (size_t k = 0; k < in.srcs.size(); ++k) {
      const char* name = in.srcs.size() == 1 || k >= 3 ? "source" : kSources[k];
      if (!in.srcs[k].immediate) f(lm_operand(name, in.srcs[k], in, R, C));
    }
  }
  if (roles & role::LmSource) f(lm_operand("source", in.srcs.at(0), in, R, C));
  if (roles & role::LmActivation) f(lm_operand("activation A", in.srcs.at(0), in, R, in.depth));
  if (roles & role::LmIndices) {
    const Operand& ix = in.srcs.at(0);
    f(OperandAccess{OperandAccess::Memory::Lmu, false, "indices", ix.addr, R, 1, ix.rs, 0, 4, in.lm_step, Quant{}});
  }
  if (roles & role::LmRowIndex) {
    const Operand& ix = in.srcs.at(1);
    f(OperandAccess{OperandAccess::Memory::Lmu, false, "row indices", ix.addr, R, 1, ix.rs, 0, 4, in.lm_step, Quant{}});
  }
  if (roles & role::HbmTileRead) f(hbm(false, "source", in, R, C, in.hbm_rs, in.hbm_cs));
  if (roles & role::HbmTileWrite) f(hbm(true, "destination", in, R, C, in.hbm_rs, in.hbm_cs));
  if (roles & role::HbmWeights) f(hbm(false, "weights B", in, in.depth, C, in.hbm_rs, in.hbm_cs, in.quant));
  if (roles & role::HbmTableRow) f(hbm(false, "table", in, 1, C, 0, in.hbm_cs));
  if (roles & role::RemoteLmDest) {
    OperandAccess a = lm_tile(true, "destination on the receiver", in, C, C);
    a.memory = OperandAccess::Memory::RemoteLmu;
    f(a);
  }
}

// The useful work of one instruction, in its engine's unit (WORK): a matrix multiply's MACs,
// a vector instruction's element operations, the bytes a DMA moves; 0 for the rest.
inline double instruction_work(const Instruction& in) {
  const double rows = static_cast<double>(in.rows), cols = static_cast<double>(in.cols);
  switch (opcode_info(in.opcode).work) {
    case Work::Macs: return rows * static_cast<double>(in.depth) * cols;
    case Work::Elements: return rows * cols;
    case Work::Bytes: return rows * cols * static_cast<double>(dtype_bytes(in.dtype));
    case Work::None: return 0;
  }
  return 0;
}

// The arithmetic of one instruction for rooflines (ARITH): SXE FLOPs (a multiply and an add
// per MAC) or VXE element operations (moves and data movement are not arithmetic). Exact
// integers: job reports sum them over a program's loops.
struct InstructionArith {
  uint64_t sxe_flops = 0, vxe_ops = 0;
};
inline InstructionArith instruction_arith(const Instruction& in) {
  switch (opcode_info(in.opcode).arith) {
    case Arith::SxeFlops: return {static_cast<uint64_t>(2 * in.rows * in.depth * in.cols), 0};
    case Arith::VxeOps: return {0, static_cast<uint64_t>(in.rows * in.cols)};
    case Arith::None: break;
  }
  return {};
}

}  // namespace lpu
