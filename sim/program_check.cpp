#include "program_check.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

#include "isa/operands.h"
#include "support/error.h"
#include "support/units.h"

namespace lpu {
namespace {

using Access = OperandAccess;
using Memory = OperandAccess::Memory;

// What each engine reads and writes (the opcode table's operand roles, isa/operands.h: the
// ISU's footprint reads them too), into `out` (reused across instructions: programs have
// hundreds of thousands). A gather's table rows depend on index values, known only while
// running: its first row stands for the table, as in the scoreboard. The receiver of an
// esl.send is a device of the same config: its local memory is as large.
void accesses(const Instruction& in, std::vector<Access>& out) {
  out.clear();
  for_each_operand(in, [&out](const Access& a) { out.push_back(a); });
}

// The bytes [lo, hi) an access covers over `iterations` loop iterations. False when a
// product or sum leaves int64: no memory is that large, so the access cannot fit anyway.
bool extent(const Access& a, int64_t iterations, int64_t& lo, int64_t& hi) {
  if (a.addr > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  int64_t row_span, col_span, first, last, shift;
  if (__builtin_mul_overflow(a.rows - 1, a.rs, &row_span) || __builtin_mul_overflow(a.cols - 1, a.cs, &col_span))
    return false;
  // Element offsets of the first and last element in address order (strides may be negative).
  if (__builtin_add_overflow(std::min<int64_t>(row_span, 0), std::min<int64_t>(col_span, 0), &first) ||
      __builtin_add_overflow(std::max<int64_t>(row_span, 0), std::max<int64_t>(col_span, 0), &last) ||
      __builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(a.step, iterations - 1, &shift))
    return false;
  if (a.quant.on()) {
    if (first < 0) return false;  // StructureCheck keeps packed strides non-negative
    packed_span(a.quant, first, last - 1, first, last);
  } else if (__builtin_mul_overflow(first, a.elem_bytes, &first) || __builtin_mul_overflow(last, a.elem_bytes, &last)) {
    return false;
  }
  const int64_t base = static_cast<int64_t>(a.addr);
  return !__builtin_add_overflow(base, first, &lo) && !__builtin_add_overflow(lo, std::min<int64_t>(shift, 0), &lo) &&
         !__builtin_add_overflow(base, last, &hi) && !__builtin_add_overflow(hi, std::max<int64_t>(shift, 0), &hi);
}

std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct MemoryLimit {
  int64_t bytes;
  std::string name;      // as messages name it
  std::string capacity;  // "4.00 GiB (hbm.capacity_gib = 4)"
};

// "" when `a` stays inside `m` over the loop's iterations, else what goes wrong.
std::string access_problem(const Access& a, int64_t iterations, const MemoryLimit& m) {
  // Built only for a message: the check itself runs for every operand of every instruction.
  auto over = [&] { return iterations > 1 && a.step != 0 ? strcat(" over ", iterations, " loop iterations") : ""; };
  int64_t lo = 0, hi = 0;
  if (!extent(a, iterations, lo, hi))
    return strcat(a.role, ": its ", m.name, " addresses overflow 64 bits (address ", hex(static_cast<int64_t>(a.addr)),
                  ", strides [", a.rs, ", ", a.cs, "] over [", a.rows, ", ", a.cols, "]",
                  a.step ? strcat(", step ", a.step) : "", over(), ")");
  if (lo < 0) return strcat(a.role, " reaches ", -lo, " bytes below address 0 of ", m.name, over());
  if (hi > m.bytes)
    return strcat(a.role, " touches ", m.name, " [", hex(lo), ", ", hex(hi), ")", over(), ", beyond its capacity of ",
                  m.capacity);
  return "";
}

std::string mnemonic(const std::string& text) { return text.substr(0, text.find(' ')); }

// Checks the instructions inside `ranges` (sorted, disjoint), or outside them with `outside`;
// loops are followed through every instruction either way.
void check_memory_bounds(const Program& p, const ArchConfig& arch, const InstructionRanges& ranges, bool outside) {
  // Capacities are at most 2^20 GiB (the config's range), so they fit int64.
  const double hbm_bytes = arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0;
  const MemoryLimit hbm{static_cast<int64_t>(hbm_bytes), "HBM",
                        strcat(format_binary_bytes(hbm_bytes), " (hbm.capacity_gib = ", arch.hbm.capacity_gib, ")")};
  const MemoryLimit lmu{arch.lmu_bytes(), "local memory (LMU)",
                        strcat(format_binary_bytes(static_cast<double>(arch.lmu_bytes())),
                               " (lmu.capacity_kib = ", arch.lmu.capacity_kib, ")")};
  std::vector<int64_t> loop_counts;  // of the loops around the current instruction, innermost last
  std::vector<Access> operands;
  auto follow_loops = [&loop_counts](const Instruction& in) {
    if (in.opcode == Opcode::LoopBegin) loop_counts.push_back(in.token);
    if (in.opcode == Opcode::LoopEnd && !loop_counts.empty()) loop_counts.pop_back();
  };
  // Segments [i, end) alternately inside and outside the ranges; those not checked only
  // follow the loops.
  size_t i = 0, r = 0;
  while (i < p.code.size()) {
    const bool inside = r < ranges.size() && ranges[r].first <= i;
    const size_t end = std::min(p.code.size(), r == ranges.size() ? p.code.size()
                                               : inside           ? ranges[r].second
                                                                  : ranges[r].first);
    if (inside) ++r;
    if (inside == outside) {
      for (; i < end; ++i) follow_loops(p.code[i]);
      continue;
    }
    for (; i < end; ++i) {
      const Instruction& in = p.code[i];
      follow_loops(in);
      // Steps advance per iteration of the innermost loop only; outer loops repeat its range.
      int64_t iterations = loop_counts.empty() || in.opcode == Opcode::LoopBegin ? 1 : loop_counts.back();
      // Every operand of every simulated instruction passes here: the messages are built only
      // for an instruction with an operand out of bounds.
      bool fits = true;
      for_each_operand(in, [&](const Access& a) {
        int64_t lo = 0, hi = 0;
        const int64_t capacity = a.memory == Memory::Hbm ? hbm.bytes : lmu.bytes;
        fits = fits && extent(a, iterations, lo, hi) && lo >= 0 && hi <= capacity;
      });
      if (fits) continue;
      accesses(in, operands);
      for (const Access& a : operands) {
        std::string why = access_problem(a, iterations, a.memory == Memory::Hbm ? hbm : lmu);
        if (why.empty()) continue;
        std::string text = print_instruction(in);
        throw InputError(strcat(instruction_location(p, i), ": ", mnemonic(text), " ", why, " in: ", text));
      }
    }
  }
}

// A run's wall time and memory grow with every instruction it fetches (the per-kernel span
// logs append per instruction), so a program whose loop counts multiply past this is refused
// before simulating rather than left to the watchdog, which bounds time but not memory. The
// largest compiled program of the built-in workloads fetches under 50,000.
constexpr uint64_t kMaxInstructionFetches = 100'000'000;

// Names the first loop whose iterations, times its enclosing loops', pass the bound (else the
// program's first instruction: many instructions in modest loops).
void check_fetch_count(const Program& p) {
  const uint64_t n = instruction_fetches(p);
  if (n <= kMaxInstructionFetches) return;
  std::vector<uint64_t> repeats{1};
  size_t at = 0;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction& in = p.code[i];
    if (in.opcode == Opcode::LoopBegin) {
      uint64_t r;
      if (__builtin_mul_overflow(repeats.back(), static_cast<uint64_t>(std::max<int64_t>(in.token, 1)), &r))
        r = std::numeric_limits<uint64_t>::max();
      repeats.push_back(r);
      if (r > kMaxInstructionFetches) {
        at = i;
        break;
      }
    } else if (in.opcode == Opcode::LoopEnd && repeats.size() > 1) {
      repeats.pop_back();
    }
  }
  const std::string count = n == std::numeric_limits<uint64_t>::max() ? "more than 2^64" : std::to_string(n);
  throw InputError(strcat(instruction_location(p, at), ": the program fetches ", count,
                          " instructions with its loops expanded (loop counts multiply across nested loops), more "
                          "than the ",
                          kMaxInstructionFetches, " one simulation takes"));
}

// Packed weights (graph/types.h, Quant) are read only by an sxe.gemm or sxe.gemm_gather that
// names their format: every other HBM operand inside a packed buffer, and every packed operand
// outside one or naming another format, would read blocks as elements (or the reverse) and
// compute garbage without a word. Checked at each operand's first address.
void check_packed_operands(const Program& p) {
  std::map<uint64_t, const BufferDecl*> packed;  // by start address
  for (const auto& b : p.buffers)
    if (b.quant.on()) packed[b.hbm_addr] = &b;
  bool any = !packed.empty();
  for (const auto& in : p.code) any = any || in.quant.on();
  if (!any) return;
  auto holder = [&](uint64_t addr) -> const BufferDecl* {
    auto it = packed.upper_bound(addr);
    if (it == packed.begin()) return nullptr;
    --it;
    return addr < it->first + static_cast<uint64_t>(it->second->bytes()) ? it->second : nullptr;
  };
  std::vector<Access> operands;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction& in = p.code[i];
    accesses(in, operands);
    for (const Access& a : operands) {
      if (a.memory != Memory::Hbm) continue;
      const BufferDecl* b = holder(a.addr);
      std::string why;
      if (a.quant.on() && !b)
        why = strcat("reads packed weights (", quant_str(a.quant), ") at hbm:", hex(static_cast<int64_t>(a.addr)),
                     ", inside no buffer stored packed");
      else if (b && !(a.quant == b->quant))
        why = strcat(a.quant.on() ? strcat("reads ", quant_str(a.quant), " blocks")
                                  : strcat(a.role, " reads or writes plain elements"),
                     " in buffer ", b->name, ", stored packed as ", quant_str(b->quant),
                     " (only sxe.gemm and sxe.gemm_gather naming its format read it)");
      if (!why.empty()) throw InputError(strcat(instruction_location(p, i), ": ", why, " in: ", print_instruction(in)));
    }
  }
}

// Programs built in memory have not met a reader's StructureCheck; the bounds walk above
// relies on it (positive tiles, loops that pair up).
void check_structure(const Program& p) {
  StructureCheck structure;
  for (size_t i = 0; i < p.code.size(); ++i)
    if (std::string why = structure.next(p.code[i]); !why.empty())
      throw InputError(strcat(instruction_location(p, i), ": ", why, " in: ", print_instruction(p.code[i])));
  size_t open_loop = 0;
  if (std::string why = structure.finish(open_loop); !why.empty())
    throw InputError(strcat(instruction_location(p, open_loop), ": ", why));
}

// A chain (vxe.OP.POST ... => rRED) on a VXE that has none (vxe.chains: false).
void check_chains(const Program& p, const ArchConfig& arch) {
  if (arch.vxe.chains) return;
  for (size_t i = 0; i < p.code.size(); ++i)
    if (p.code[i].post || p.code[i].acc)
      throw InputError(strcat(
          instruction_location(p, i), ": a chain (a post op or a row reduction in a vxe.<op>), but config ", arch.name,
          " has vxe.chains: false (compile for it, or split the chain) in: ", print_instruction(p.code[i])));
}

}  // namespace

void check_program(const Program& p, const ArchConfig& arch) { check_program(p, arch, InstructionRanges{}); }

void check_program(const Program& p, const ArchConfig& arch, const InstructionRanges& bounds_skipped) {
  check_structure(p);
  check_fetch_count(p);
  check_memory_bounds(p, arch, bounds_skipped, true);
  check_packed_operands(p);
  check_chains(p, arch);
}

void check_memory_bounds(const Program& p, const ArchConfig& arch, const InstructionRanges& ranges) {
  check_memory_bounds(p, arch, ranges, false);
}

uint64_t instruction_fetches(const Program& p) {
  constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();
  uint64_t total = 0;
  std::vector<uint64_t> repeats{1};  // times the current position is fetched, per nesting level
  auto add = [&](uint64_t n) { return !__builtin_add_overflow(total, n, &total); };
  for (const Instruction& in : p.code) {
    if (in.opcode == Opcode::Halt) return add(1) ? total : kSaturated;  // the first halt ends the run
    // An endloop is fetched once per iteration of its loop, a loop once per entry.
    if (!add(repeats.back())) return kSaturated;
    if (in.opcode == Opcode::LoopBegin) {
      uint64_t r;
      if (__builtin_mul_overflow(repeats.back(), static_cast<uint64_t>(std::max<int64_t>(in.token, 1)), &r))
        r = kSaturated;
      repeats.push_back(r);
    } else if (in.opcode == Opcode::LoopEnd && repeats.size() > 1) {
      repeats.pop_back();
    }
  }
  return total;
}

}  // namespace lpu
