#include "isa/program_fields.h"

#include <algorithm>
#include <iterator>

#include "support/error.h"

namespace lpu::fields {

namespace {

constexpr const char* kFieldName[] = {"rows",   "cols",     "depth",          "host_op",   "hbm address", "hbm_rs",
                                      "hbm_cs", "lm_addr",  "token",          "hbm_step",  "lm_step",     "peer",
                                      "lm_rs",  "acc_addr", "source address", "source rs", "source cs"};
static_assert(std::size(kFieldName) == SrcCs + 1, "a name for every field");

int64_t& field_ref(Instruction& in, int f, size_t src) {
  switch (f) {
    case Rows: return in.rows;
    case Cols: return in.cols;
    case Depth: return in.depth;
    case HostOp: return in.host_op;
    case HbmRs: return in.hbm_rs;
    case HbmCs: return in.hbm_cs;
    case Token: return in.token;
    case HbmStep: return in.hbm_step;
    case LmStep: return in.lm_step;
    case Peer: return in.peer;
    case LmRs: return in.lm_rs;
    case SrcRs: return in.srcs[src].rs;
    case SrcCs: return in.srcs[src].cs;
    default: break;
  }
  throw InternalError("program fields: not a plain integer field");
}

uint64_t& addr_ref(Instruction& in, int f, size_t src) {
  if (f == HbmAddr) return in.hbm_addr;
  if (f == LmAddr) return in.lm_addr;
  if (f == AccAddr) return in.acc_addr;
  return in.srcs[src].addr;
}

bool is_address(int f) { return f == HbmAddr || f == LmAddr || f == AccAddr || f == SrcAddr; }

}  // namespace

const char* field_name(int f) { return kFieldName[f]; }

int64_t get(const Instruction& in, int f, size_t src) {
  auto& m = const_cast<Instruction&>(in);
  if (is_address(f)) return static_cast<int64_t>(addr_ref(m, f, src));
  return field_ref(m, f, src);
}

void set(Instruction& in, int f, size_t src, int64_t v) {
  if (is_address(f))
    addr_ref(in, f, src) = static_cast<uint64_t>(v);
  else
    field_ref(in, f, src) = v;
}

std::string where(const Program& p, size_t i) {
  const Instruction& in = p.code[i];
  std::string k = in.kernel >= 0 && static_cast<size_t>(in.kernel) < p.kernels.size()
                      ? p.kernels[static_cast<size_t>(in.kernel)]
                      : "-";
  return strcat("instruction ", i, " (", opcode_name(in.opcode), ", kernel ", k, ")");
}

bool same_structure(const Instruction& x, const Instruction& y) {
  if (x.opcode != y.opcode || x.vop != y.vop || x.rop != y.rop || x.dtype != y.dtype ||
      x.srcs.size() != y.srcs.size() || x.post != y.post || x.acc != y.acc)
    return false;
  for (size_t s = 0; s < x.srcs.size(); ++s)
    if (x.srcs[s].immediate != y.srcs[s].immediate || (x.srcs[s].immediate && x.srcs[s].value != y.srcs[s].value))
      return false;
  return true;
}

std::string program_difference(const Program& p, const Program& q) {
  if (q.code.size() != p.code.size())
    return strcat("the compiled program has ", p.code.size(), " instructions, the derived one ", q.code.size(),
                  " (the instruction stream changed: a kernel's fusion or tiling)");
  if (q.buffers.size() != p.buffers.size())
    return strcat("the compiled program has ", p.buffers.size(), " buffers, the derived one ", q.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferDecl &x = p.buffers[i], &y = q.buffers[i];
    if (x.name != y.name || x.hbm_addr != y.hbm_addr || x.role != y.role || !(x.type == y.type))
      return strcat("buffer ", i, " differs: compiled ", x.name, " at ", x.hbm_addr, ", derived ", y.name, " at ",
                    y.hbm_addr, " (name, address, type or role)");
  }
  if (p.name != q.name) return strcat("the program name differs: compiled ", p.name, ", derived ", q.name);
  if (p.kernels != q.kernels) {
    for (size_t k = 0; k < std::min(p.kernels.size(), q.kernels.size()); ++k)
      if (p.kernels[k] != q.kernels[k])
        return strcat("kernel ", k, " differs: compiled ", p.kernels[k], ", derived ", q.kernels[k]);
    return strcat("the compiled program has ", p.kernels.size(), " kernels, the derived one ", q.kernels.size());
  }
  if (p.host_ops != q.host_ops) return "the host ops differ";
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction &x = p.code[i], &y = q.code[i];
    if (x.same_as(y)) continue;
    std::string why = where(p, i) + ":";
    if (x.opcode != y.opcode) {
      why += strcat(" compiled ", opcode_name(x.opcode), ", derived ", opcode_name(y.opcode));
    } else if (x.kernel != y.kernel) {
      why += strcat(" kernel index compiled ", x.kernel, ", derived ", y.kernel);
    } else if (x.post != y.post || x.acc != y.acc) {
      why += strcat(" compiled ", print_instruction(x), ", derived ", print_instruction(y),
                    " (a chain's post op or row reduction)");
    } else {
      for (int f = 0; f < kInstructionFields; ++f)
        if (get(x, f, 0) != get(y, f, 0))
          why += strcat(" ", kFieldName[f], " compiled ", get(x, f, 0), ", derived ", get(y, f, 0), ";");
      for (size_t k = 0; k < std::min(x.srcs.size(), y.srcs.size()); ++k)
        for (int f : {SrcAddr, SrcRs, SrcCs})
          if (get(x, f, k) != get(y, f, k))
            why += strcat(" ", kFieldName[f], " ", k, " compiled ", get(x, f, k), ", derived ", get(y, f, k), ";");
    }
    return why;
  }
  return "";
}

}  // namespace lpu::fields
