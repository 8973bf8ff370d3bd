#include "isa/program_template.h"

#include <algorithm>

#include "support/error.h"

namespace lpu {

bool uses_hbm_address(Opcode op) {
  return op == Opcode::DmaLoad || op == Opcode::DmaStore || op == Opcode::DmaGather || op == Opcode::SxeGemm;
}

namespace {

constexpr const char* kFieldName[] = {"rows",    "cols",   "depth",          "host_op",   "hbm address",
                                      "hbm_rs",  "hbm_cs", "lm_addr",        "token",     "hbm_step",
                                      "lm_step", "peer",   "source address", "source rs", "source cs"};

int64_t& field_ref(Instruction& in, int f, size_t src) {
  switch (f) {
    case 0: return in.rows;
    case 1: return in.cols;
    case 2: return in.depth;
    case 3: return in.host_op;
    case 5: return in.hbm_rs;
    case 6: return in.hbm_cs;
    case 8: return in.token;
    case 9: return in.hbm_step;
    case 10: return in.lm_step;
    case 11: return in.peer;
    case 13: return in.srcs[src].rs;
    case 14: return in.srcs[src].cs;
    default: break;
  }
  throw InternalError("ProgramTemplate: not a plain integer field");
}

uint64_t& addr_ref(Instruction& in, int f, size_t src) {
  if (f == 4) return in.hbm_addr;
  if (f == 7) return in.lm_addr;
  return in.srcs[src].addr;
}

// Field f of `in` as an integer (addresses wrap to int64: differences are what matter).
int64_t get(const Instruction& in, int f, size_t src) {
  auto& m = const_cast<Instruction&>(in);
  if (f == 4 || f == 7 || f == 12) return static_cast<int64_t>(addr_ref(m, f, src));
  return field_ref(m, f, src);
}
void set(Instruction& in, int f, size_t src, int64_t v) {
  if (f == 4 || f == 7 || f == 12)
    addr_ref(in, f, src) = static_cast<uint64_t>(v);
  else
    field_ref(in, f, src) = v;
}

int64_t align_to(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Bases of `bufs` by the code generator's rule (codegen/lpu_codegen.cpp: place()).
std::vector<uint64_t> layout(const std::vector<BufferDecl>& bufs, int64_t alignment) {
  std::vector<uint64_t> bases;
  uint64_t next = 0;
  for (const auto& b : bufs) {
    bases.push_back(next);
    next += static_cast<uint64_t>(align_to(b.type.bytes(), alignment));
  }
  return bases;
}

// Index of the buffer whose [base, next base) holds `addr` (bases ascending).
size_t buffer_of(const std::vector<uint64_t>& bases, uint64_t addr) {
  auto it = std::upper_bound(bases.begin(), bases.end(), addr);
  return it == bases.begin() ? 0 : static_cast<size_t>(it - bases.begin() - 1);
}

std::string where(const Program& p, size_t i) {
  const Instruction& in = p.code[i];
  std::string k = in.kernel >= 0 && static_cast<size_t>(in.kernel) < p.kernels.size()
                      ? p.kernels[static_cast<size_t>(in.kernel)]
                      : "-";
  return strcat("instruction ", i, " (", opcode_name(in.opcode), ", kernel ", k, ")");
}

}  // namespace

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
    if (x.opcode != y.opcode || x.vop != y.vop || x.rop != y.rop || x.dtype != y.dtype || x.kernel != y.kernel ||
        x.srcs.size() != y.srcs.size()) {
      why = strcat(where(a, i), ": opcode, operation, dtype, kernel or operand count differs");
      return std::nullopt;
    }
    for (size_t s = 0; s < x.srcs.size(); ++s)
      if (x.srcs[s].immediate != y.srcs[s].immediate || x.srcs[s].value != y.srcs[s].value) {
        why = strcat(where(a, i), ": immediate operand ", s, " differs");
        return std::nullopt;
      }
    auto affine = [&](int f, size_t src) {
      int64_t d = get(y, f, src) - get(x, f, src);
      if (d % ds) {
        why = strcat(where(a, i), ": ", kFieldName[f], " ", get(x, f, src), " -> ", get(y, f, src),
                     " is not affine in the symbol");
        return false;
      }
      if (d) t.deltas_.push_back({static_cast<uint32_t>(i), static_cast<Field>(f), static_cast<uint16_t>(src), d / ds});
      return true;
    };
    for (int f : {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11})
      if (!affine(f, 0)) return std::nullopt;
    for (size_t s = 0; s < x.srcs.size(); ++s)
      if (!x.srcs[s].immediate)
        for (int f : {12, 13, 14})
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
    } else if (!affine(4, 0)) {
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

bool ProgramTemplate::verify(const Program& p, int64_t s, std::string& why) {
  Program q = instantiate(s);
  if (q.code.size() != p.code.size()) {
    why = strcat("the compiled program has ", p.code.size(), " instructions, the template ", q.code.size(),
                 " (the instruction stream changed: a kernel's fusion or tiling)");
    return false;
  }
  if (q.buffers.size() != p.buffers.size()) {
    why = strcat("the compiled program has ", p.buffers.size(), " buffers, the template ", q.buffers.size());
    return false;
  }
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferDecl &x = p.buffers[i], &y = q.buffers[i];
    if (x.name != y.name || x.hbm_addr != y.hbm_addr || x.role != y.role || !(x.type == y.type)) {
      why = strcat("buffer ", x.name, " differs (name, address, type or role)");
      return false;
    }
  }
  if (p.kernels != q.kernels || p.host_ops != q.host_ops || p.name != q.name) {
    why = "the kernels or host ops differ";
    return false;
  }
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction &x = p.code[i], &y = q.code[i];
    if (x.same_as(y)) continue;
    why = where(p, i) + ":";
    if (x.opcode != y.opcode) {
      why += strcat(" compiled ", opcode_name(x.opcode), ", template ", opcode_name(y.opcode));
    } else {
      for (int f = 0; f <= 11; ++f)
        if (get(x, f, 0) != get(y, f, 0))
          why += strcat(" ", kFieldName[f], " compiled ", get(x, f, 0), ", template ", get(y, f, 0), ";");
      for (size_t k = 0; k < std::min(x.srcs.size(), y.srcs.size()); ++k)
        for (int f : {12, 13, 14})
          if (get(x, f, k) != get(y, f, k))
            why += strcat(" ", kFieldName[f], " ", k, " compiled ", get(x, f, k), ", template ", get(y, f, k), ";");
    }
    return false;
  }
  if (s > hi_) hi_ = s;
  if (s < lo_) lo_ = s;
  return true;
}

}  // namespace lpu
