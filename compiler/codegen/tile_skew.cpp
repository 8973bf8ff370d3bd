#include "codegen/tile_skew.h"

#include <algorithm>
#include <iterator>
#include <queue>
#include <tuple>
#include <utility>

#include "isa/operands.h"

namespace lpu {
namespace {

struct Span {
  int64_t lo, hi;  // bytes [lo, hi)
};
constexpr int64_t kLmElemBytes = 4;  // local memory holds fp32
constexpr int64_t kRowGroups = 4;
constexpr int64_t kMinGroupRows = 8;
constexpr int64_t kMinGroupCols = 64;

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

namespace {
// The local-memory spans an instruction reads and writes.
struct Footprint {
  std::vector<Span> reads, writes;
};
Footprint lm_footprint(const Instruction& in) {
  Footprint f;
  for_each_operand(in, [&](const OperandAccess& a) {
    if (a.memory == OperandAccess::Memory::Lmu) (a.write ? f.writes : f.reads).push_back(lm_span(a));
  });
  return f;
}
bool conflict(const Footprint& a, const Footprint& b) {
  for (const Span& w : a.writes)
    if (overlaps(w, b.reads) || overlaps(w, b.writes)) return true;
  for (const Span& w : b.writes)
    if (overlaps(w, a.reads)) return true;
  return false;
}

// Rows [r0, r0 + n) of a vector instruction: every vector op is row-local (element (r, c) of the
// destination reads element (r, c) of each source; a reduction combines row r's columns).
Instruction vector_rows(const Instruction& in, int64_t r0, int64_t n) {
  Instruction p = in;
  p.rows = n;
  auto moved = [&](uint64_t addr, int64_t row_stride) {
    return static_cast<uint64_t>(static_cast<int64_t>(addr) + r0 * row_stride * kLmElemBytes);
  };
  p.lm_addr = moved(in.lm_addr, has_role(in.opcode, role::LmDestColumn) ? 1 : in.lm_row_stride());
  for (Operand& s : p.srcs)
    if (!s.immediate) s.addr = moved(s.addr, s.rs);
  if (in.acc) p.acc_addr = moved(in.acc_addr, 1);  // a row reduction's [R, 1] column
  return p;
}

// A piece of a vector instruction: rows of one group, or the whole instruction (group 0).
struct Piece {
  Instruction in;
  int64_t group;
  Footprint fp;
};

// An instruction's row groups: at most kRowGroups, of at least kMinGroupRows rows each (every
// piece pays the pipeline's latency again: 4-row groups left OPT-1.3B's decode attention at 66.5%
// of its roofline on lpu-asic, 8-row groups at 70.1%: lpu-bench roofline).
void append_pieces(const Instruction& in, std::vector<Piece>& pieces) {
  const int64_t groups = std::clamp<int64_t>(in.rows / kMinGroupRows, 1, kRowGroups);
  const int64_t per = (in.rows + groups - 1) / groups;
  for (int64_t g = 0, r0 = 0; r0 < in.rows; ++g, r0 += per) {
    Instruction p = groups == 1 ? in : vector_rows(in, r0, std::min(per, in.rows - r0));
    Footprint fp = lm_footprint(p);
    pieces.push_back({std::move(p), g, std::move(fp)});
  }
}

// The pieces in group-major order as far as their local-memory dependencies allow: a list
// schedule where a piece goes once every piece before it in the plain order that it conflicts
// with has gone, the lowest group first (then the plain order).
std::vector<Instruction> group_major(const std::vector<Piece>& pieces) {
  const size_t n = pieces.size();
  std::vector<std::vector<size_t>> after(n);
  std::vector<size_t> waits(n, 0);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b)
      if (conflict(pieces[a].fp, pieces[b].fp)) {
        after[a].push_back(b);
        ++waits[b];
      }
  using Key = std::tuple<int64_t, size_t>;  // (group, position in the plain order)
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (waits[i] == 0) ready.emplace(pieces[i].group, i);
  std::vector<Instruction> out;
  while (!ready.empty()) {
    const size_t i = std::get<1>(ready.top());
    ready.pop();
    out.push_back(pieces[i].in);
    for (size_t b : after[i])
      if (--waits[b] == 0) ready.emplace(pieces[b].group, b);
  }
  return out;
}

// A run of vector instructions followed by matrix instruction `next`: cut into row groups when
// `next` can start before the last group is done (it reads some rows only: one head's V) and
// the run is long enough to pay for the pieces' latencies (rows of at least kMinGroupCols
// columns: a decode step's context; below it a small graph's attention lost up to 2% of its
// cycles, scripts/stats_compare.sh). Else the run as it is. The threshold is monotone in the
// context, as generate's program templates require (isa/program_template.h), and low: the
// program changes shape where a generation's context crosses it, so no template spans it and
// generate bisects for the crossing (at 256, `lpu generate opt-1.3b --arch lpu-asic` compiled
// 70 regions instead of 35; between 64 and 256 the cut changes no statistics).
std::vector<Instruction> interleave_run(std::vector<Instruction> run, const Instruction& next) {
  int64_t widest = 0;
  for (const Instruction& in : run) widest = std::max(widest, in.cols);
  if (widest < kMinGroupCols) return run;
  std::vector<Piece> pieces;
  for (const Instruction& in : run) append_pieces(in, pieces);
  const int64_t last = std::max_element(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
                         return a.group < b.group;
                       })->group;
  const Footprint next_fp = lm_footprint(next);
  for (const Piece& p : pieces)
    if (last == 0 || (p.group == last && conflict(p.fp, next_fp))) return run;
  return group_major(pieces);
}
}  // namespace

std::vector<Instruction> interleave_row_groups(const std::vector<Instruction>& code) {
  const std::vector<size_t> cuts = matrix_stage_cuts(code);
  if (cuts.size() < 2) return code;
  auto at = [&](size_t i) { return code.begin() + static_cast<std::ptrdiff_t>(i); };
  auto is_vector = [&](size_t i) { return opcode_unit(code[i].opcode) == Unit::Vxe; };
  auto is_matrix = [&](size_t i) { return opcode_unit(code[i].opcode) == Unit::Sxe; };
  std::vector<Instruction> out(code.begin(), at(cuts[0]));
  for (size_t i = cuts[0]; i < cuts[1];) {
    size_t end = i;
    while (end < cuts[1] && is_vector(end)) ++end;
    if (end == i) {
      out.push_back(code[i++]);
      continue;
    }
    size_t next = end;
    while (next < cuts[1] && !is_matrix(next)) ++next;
    std::vector<Instruction> run(at(i), at(end));
    if (next < cuts[1]) run = interleave_run(std::move(run), code[next]);
    out.insert(out.end(), std::make_move_iterator(run.begin()), std::make_move_iterator(run.end()));
    i = end;
  }
  out.insert(out.end(), at(cuts[1]), code.end());
  return out;
}

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
