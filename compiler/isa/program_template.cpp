#include "isa/program_template.h"

#include <algorithm>

#include "isa/program_fields.h"
#include "support/error.h"

namespace lpu {

bool uses_hbm_address(Opcode op) {
  // Its HBM operand (roles from the opcode table) names a place in a buffer.
  return (opcode_info(op).roles & (role::HbmTileRead | role::HbmTileWrite | role::HbmWeights | role::HbmTableRow)) != 0;
}

using fields::buffer_of;
using fields::get;
using fields::layout;
using fields::set;
using fields::where;

std::optional<ProgramTemplate> ProgramTemplate::make(const Program& a, int64_t sa, const Program& b, int64_t sb,
                                                     int64_t hbm_alignment, std::string& why) {
  if (sb <= sa) throw InternalError("ProgramTemplate::make: needs sa < sb");
  const int64_t ds = sb - sa;
  ProgramTemplate t;
  t.base_ = a;
  t.s0_ = t.lo_ = sa;
  t.hi_ = sb;
  t.alignment_ = hbm_alignment;
  if (a.name != b.name || a.kernels != b.kernels || a.host_ops != b.host_ops) {
    why = "the kernels or host ops differ";
    return std::nullopt;
  }
  if (a.buffers.size() != b.buffers.size()) {
    why = strcat(a.buffers.size(), " buffers vs ", b.buffers.size());
    return std::nullopt;
  }
  std::vector<uint64_t> la = layout(a.buffers, hbm_alignment), lb = layout(b.buffers, hbm_alignment);
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const BufferDecl &x = a.buffers[i], &y = b.buffers[i];
    if (x.name != y.name || x.role != y.role || x.type.dtype != y.type.dtype ||
        x.type.shape.size() != y.type.shape.size()) {
      why = strcat("buffer ", i, " (", x.name, ") differs in name, role, dtype or rank");
      return std::nullopt;
    }
    if (x.hbm_addr != la[i] || y.hbm_addr != lb[i]) {
      why = strcat("buffer ", x.name, " is not where the sequential layout puts it");
      return std::nullopt;
    }
    for (size_t d = 0; d < x.type.shape.size(); ++d) {
      int64_t diff = y.type.shape[d] - x.type.shape[d];
      if (diff % ds) {
        why = strcat("buffer ", x.name, " dimension ", d, " is not affine in the symbol");
        return std::nullopt;
      }
      if (diff) t.buffer_dims_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(d), diff / ds});
    }
  }
  if (a.code.size() != b.code.size()) {
    why = strcat(a.code.size(), " instructions vs ", b.code.size());
    return std::nullopt;
  }
  for (size_t i = 0; i < a.code.size(); ++i) {
    const Instruction &x = a.code[i], &y = b.code[i];
    if (!fields::same_structure(x, y) || x.kernel != y.kernel) {
      why = strcat(where(a, i), ": opcode, operation, dtype, kernel, operand count or an immediate differs");
      return std::nullopt;
    }
    auto affine = [&](int f, size_t src) {
      int64_t d = get(y, f, src) - get(x, f, src);
      if (d % ds) {
        why = strcat(where(a, i), ": ", fields::field_name(f), " ", get(x, f, src), " -> ", get(y, f, src),
                     " is not affine in the symbol");
        return false;
      }
      if (d)
        t.deltas_.push_back(
            {static_cast<uint32_t>(i), static_cast<fields::Field>(f), static_cast<uint16_t>(src), d / ds});
      return true;
    };
    for (int f = 0; f < fields::kInstructionFields; ++f)  // the HBM address below
      if (f != fields::HbmAddr && !affine(f, 0)) return std::nullopt;
    for (size_t s = 0; s < x.srcs.size(); ++s)
      if (!x.srcs[s].immediate)
        for (int f : {fields::SrcAddr, fields::SrcRs, fields::SrcCs})
          if (!affine(f, s)) return std::nullopt;
    if (uses_hbm_address(x.opcode)) {
      size_t ba = buffer_of(la, x.hbm_addr), bb = buffer_of(lb, y.hbm_addr);
      if (ba != bb) {
        why =
            strcat(where(a, i), ": its HBM address moves from buffer ", a.buffers[ba].name, " to ", b.buffers[bb].name);
        return std::nullopt;
      }
      int64_t oa = static_cast<int64_t>(x.hbm_addr - la[ba]), ob = static_cast<int64_t>(y.hbm_addr - lb[bb]);
      if ((ob - oa) % ds) {
        why = strcat(where(a, i), ": its offset into ", a.buffers[ba].name, " is not affine in the symbol");
        return std::nullopt;
      }
      t.hbm_refs_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(ba), oa, (ob - oa) / ds});
    } else if (!affine(fields::HbmAddr, 0)) {
      return std::nullopt;
    }
  }
  std::string vwhy;
  if (!t.verify(b, sb, vwhy)) throw InternalError("ProgramTemplate: does not reproduce its own probe: " + vwhy);
  return t;
}

Program ProgramTemplate::instantiate(int64_t s) const {
  Program p = base_;
  const int64_t d = s - s0_;
  for (const auto& bd : buffer_dims_) p.buffers[bd.buffer].type.shape[bd.dim] += bd.slope * d;
  std::vector<uint64_t> bases = layout(p.buffers, alignment_);
  for (size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].hbm_addr = bases[i];
  for (const auto& dl : deltas_) {
    Instruction& in = p.code[dl.instr];
    set(in, dl.field, dl.src, get(in, dl.field, dl.src) + dl.slope * d);
  }
  for (const auto& r : hbm_refs_)
    p.code[r.instr].hbm_addr = bases[r.buffer] + static_cast<uint64_t>(r.off0 + r.slope * d);
  return p;
}

bool ProgramTemplate::same_symbolic_part(const ProgramTemplate& o) const {
  return s0_ == o.s0_ && alignment_ == o.alignment_ && deltas_ == o.deltas_ && hbm_refs_ == o.hbm_refs_ &&
         buffer_dims_ == o.buffer_dims_;
}

bool ProgramTemplate::verify(const Program& p, int64_t s, std::string& why) {
  why = fields::program_difference(p, instantiate(s));
  if (!why.empty()) return false;
  if (s > hi_) hi_ = s;
  if (s < lo_) lo_ = s;
  return true;
}

}  // namespace lpu
