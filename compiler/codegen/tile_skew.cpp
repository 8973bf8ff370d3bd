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

bool overlaps(const Span& s, const std::vector<Span>& spans) {
  for (const Span& w : spans)
    if (s.lo < w.hi && w.lo < s.hi) return true;
  return false;
}

}  // namespace

std::vector<size_t> matrix_stage_cuts(const std::vector<Instruction>& code, size_t max_cuts) {
  std::vector<size_t> cuts;
  std::vector<Span> matrix_reads, matrix_writes;  // of the matrix instructions of this stage
  for (size_t i = 0; i < code.size() && cuts.size() < max_cuts; ++i) {
    const Instruction& in = code[i];
    const bool matrix = opcode_unit(in.opcode) == Unit::Sxe;
    bool waits = false;
    for_each_operand(in, [&](const OperandAccess& a) {
      if (a.memory != OperandAccess::Memory::Lmu) return;
      const Span sp = lm_span(a);
      if (matrix)
        (a.write ? matrix_writes : matrix_reads).push_back(sp);
      else
        waits |= overlaps(sp, matrix_writes) || (a.write && overlaps(sp, matrix_reads));
    });
    if (!waits) continue;
    cuts.push_back(i);
    matrix_reads.clear();
    matrix_writes.clear();
  }
  return cuts;
}

namespace {
// Instructions [begin, end) of stage s of a tile cut at `cuts`.
std::pair<size_t, size_t> stage_range(const std::vector<size_t>& cuts, size_t size, size_t s) {
  const size_t begin = s == 0 ? 0 : s - 1 < cuts.size() ? cuts[s - 1] : size;
  const size_t end = s < cuts.size() ? cuts[s] : size;
  return {begin, std::max(begin, end)};
}
}  // namespace

SkewedTiles skew_tiles(std::vector<std::vector<Instruction>> tiles, int64_t buffers) {
  const size_t T = tiles.size();
  std::vector<std::vector<size_t>> cuts(T);
  size_t stages = 1;
  if (buffers >= 2 && T >= 2)
    for (size_t t = 0; t < T; ++t) {
      cuts[t] = matrix_stage_cuts(tiles[t]);
      stages = std::max(stages, cuts[t].size() + 1);
    }
  if (stages == 1) {
    SkewedTiles plain;
    plain.steps = std::move(tiles);
    return plain;
  }
  // Stage s of tile t in step t + s. A step's stages go in ascending order, except that a stage
  // of the tile `buffers` before the one this step starts (the tile whose local memory it
  // reuses) goes first: all of that tile then precedes the new one, since a tile has at most
  // buffers + 1 stages (max_cuts 2, buffers >= 2).
  const auto nbuf = static_cast<size_t>(buffers);
  SkewedTiles out;
  out.steps.resize(T + stages - 1);
  for (size_t i = 0; i < out.steps.size(); ++i) {
    std::vector<size_t> order;
    for (size_t s = 0; s < stages; ++s)
      if (i >= s && i - s < T) order.push_back(s);
    std::stable_partition(order.begin(), order.end(), [&](size_t s) { return s >= nbuf && i < T; });
    for (size_t s : order) {
      const size_t t = i - s;
      auto [b, e] = stage_range(cuts[t], tiles[t].size(), s);
      out.steps[i].insert(out.steps[i].end(), tiles[t].begin() + static_cast<std::ptrdiff_t>(b),
                          tiles[t].begin() + static_cast<std::ptrdiff_t>(e));
    }
  }
  out.prologue = std::min(stages - 1, out.steps.size());
  out.epilogue = T >= stages ? stages - 1 : out.steps.size() - out.prologue;
  return out;
}

}  // namespace lpu
