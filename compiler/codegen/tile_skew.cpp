#include "codegen/tile_skew.h"

#include <algorithm>
#include <utility>

#include "isa/operands.h"

namespace lpu {
namespace {

struct Span {
  int64_t lo, hi;  // bytes [lo, hi)
};

// The local-memory bytes an operand touches: the hull of its first and last elements.
Span lm_span(const OperandAccess& a) {
  const int64_t base = static_cast<int64_t>(a.addr);
  int64_t lo = 0, hi = 0;
  for (int64_t r : {int64_t{0}, std::max<int64_t>(a.rows - 1, 0)})
    for (int64_t c : {int64_t{0}, std::max<int64_t>(a.cols - 1, 0)}) {
      const int64_t off = (r * a.rs + c * a.cs) * a.elem_bytes;
      lo = std::min(lo, off);
      hi = std::max(hi, off + a.elem_bytes);
    }
  return {base + lo, base + hi};
}

bool overlaps(const Span& s, const std::vector<Span>& written) {
  for (const Span& w : written)
    if (s.lo < w.hi && w.lo < s.hi) return true;
  return false;
}

}  // namespace

size_t matrix_result_cut(const std::vector<Instruction>& code) {
  std::vector<Span> matrix_writes;
  for (size_t i = 0; i < code.size(); ++i) {
    const Instruction& in = code[i];
    const bool matrix = opcode_unit(in.opcode) == Unit::Sxe;
    bool reads_result = false;
    for_each_operand(in, [&](const OperandAccess& a) {
      if (a.memory != OperandAccess::Memory::Lmu) return;
      if (a.write) {
        if (matrix) matrix_writes.push_back(lm_span(a));
      } else if (!matrix && !matrix_writes.empty() && overlaps(lm_span(a), matrix_writes)) {
        reads_result = true;
      }
    });
    if (reads_result) return i;
  }
  return code.size();
}

std::vector<std::vector<Instruction>> skew_tiles(const std::vector<std::vector<Instruction>>& tiles, int64_t buffers) {
  if (buffers < 2 || tiles.size() < 2) return tiles;
  std::vector<size_t> cut(tiles.size());
  bool any = false;
  for (size_t t = 0; t < tiles.size(); ++t) {
    cut[t] = matrix_result_cut(tiles[t]);
    any |= cut[t] < tiles[t].size();
  }
  if (!any) return tiles;
  std::vector<std::vector<Instruction>> steps(tiles.size() + 1);
  for (size_t t = 0; t <= tiles.size(); ++t) {
    if (t < tiles.size())  // A(t) opens step t
      steps[t].insert(steps[t].end(), tiles[t].begin(), tiles[t].begin() + static_cast<std::ptrdiff_t>(cut[t]));
    if (t > 0)  // B(t - 1) closes it
      steps[t].insert(steps[t].end(), tiles[t - 1].begin() + static_cast<std::ptrdiff_t>(cut[t - 1]), tiles[t - 1].end());
  }
  return steps;
}

}  // namespace lpu
