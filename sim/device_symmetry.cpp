#include "device_symmetry.h"

#include <optional>

#include "support/error.h"

namespace lpu {

namespace {
// Why device d's program is not device 0's rotated by d ("" when it is).
std::string rank_asymmetry(const Program& p0, const Program& pd, int d, int devices) {
  if (pd.code.size() != p0.code.size())
    return strcat("device ", d, " has ", pd.code.size(), " instructions, device 0 ", p0.code.size());
  if (pd.buffers.size() != p0.buffers.size() || pd.host_ops != p0.host_ops || pd.kernels.size() != p0.kernels.size())
    return strcat("device ", d, " has other buffers, kernels or host ops than device 0");
  for (size_t b = 0; b < p0.buffers.size(); ++b)
    if (pd.buffers[b].hbm_addr != p0.buffers[b].hbm_addr || pd.buffers[b].bytes() != p0.buffers[b].bytes())
      return strcat("device ", d, ": buffer ", pd.buffers[b].name, " is placed or sized differently from device 0's");
  // The one local-memory offset by which device d's own slot differs from device 0's.
  std::optional<int64_t> moved;
  auto same_lm = [&](uint64_t a0, uint64_t ad) {
    if (a0 == ad) return true;
    int64_t delta = static_cast<int64_t>(ad - a0);
    if (!moved) moved = delta;
    return *moved == delta;
  };
  for (size_t i = 0; i < p0.code.size(); ++i) {
    const Instruction& a = p0.code[i];
    Instruction b = pd.code[i];
    auto differs = [&](const char* what) {
      return strcat("device ", d, ", instruction ", i, " (", print_instruction(b), "): ", what);
    };
    if (a.peer >= 0) {
      if (b.peer != (a.peer + d) % devices) return differs("its peer is not device 0's rotated");
      b.peer = a.peer;
    }
    if (!same_lm(a.lm_addr, b.lm_addr)) return differs("local-memory addresses move by more than one offset");
    b.lm_addr = a.lm_addr;
    if (!same_lm(a.acc_addr, b.acc_addr)) return differs("local-memory addresses move by more than one offset");
    b.acc_addr = a.acc_addr;
    if (b.srcs.size() == a.srcs.size())
      for (size_t s = 0; s < a.srcs.size(); ++s) {
        if (!same_lm(a.srcs[s].addr, b.srcs[s].addr))
          return differs("local-memory addresses move by more than one offset");
        b.srcs[s].addr = a.srcs[s].addr;
      }
    // A vector op's scalar operand moves no time (a mirrored run is a timing run): the ranks of
    // expert parallelism differ only in the number of their first expert, a vxe.sub immediate.
    if (opcode_info(a.opcode).unit == Unit::Vxe && b.opcode == a.opcode && b.srcs.size() == a.srcs.size())
      for (size_t s = 0; s < a.srcs.size(); ++s)
        if (a.srcs[s].immediate && b.srcs[s].immediate) b.srcs[s].value = a.srcs[s].value;
    if (!b.same_as(a))
      return differs("it differs from device 0's in more than its peer, local-memory slot and vector scalars");
  }
  return "";
}
}  // namespace

std::string rotation_asymmetry(const Program& p0, const std::vector<const Program*>& others, int devices) {
  if (static_cast<int>(others.size()) + 1 != devices)
    return strcat(others.size() + 1, " programs for ", devices, " devices");
  for (size_t k = 0; k < others.size(); ++k) {
    if (!others[k]) return strcat("device ", k + 1, " has no program");
    std::string why = rank_asymmetry(p0, *others[k], static_cast<int>(k + 1), devices);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace lpu
