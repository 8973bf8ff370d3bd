#include "codegen/tile_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

namespace lpu {

int64_t instruction_hbm_bytes(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore:
    case Opcode::DmaGather: return in.rows * in.cols * dtype_bytes(in.dtype);
    case Opcode::SxeGemm:  // packed B: its blocks
      return in.quant.on() ? in.quant.bytes(in.depth * in.cols) : in.depth * in.cols * dtype_bytes(in.dtype);
    case Opcode::SxeGemmGather:  // a slab per row
      return in.rows *
             (in.quant.on() ? in.quant.bytes(in.depth * in.cols) : in.depth * in.cols * dtype_bytes(in.dtype));
    default: return 0;
  }
}

namespace {
// Tile bytes by (rows, cols), computed once each.
struct TileMeasure {
  TileFootprintAnalysis& fa;
  std::map<std::pair<int64_t, int64_t>, int64_t> measured;
  int64_t operator()(int64_t rows, int64_t cols) {
    auto key = std::make_pair(rows, cols);
    if (auto it = measured.find(key); it != measured.end()) return it->second;
    return measured[key] = fa.peak_bytes(rows, cols);
  }
};

// Rules 3 and 4: for tiles of 1, 2, 4, ... rows, the widest column tile (a multiple of the granule,
// and of 32 columns where that fits, so that windows start on 64-byte HBM boundaries in fp16)
// that fits, balanced over the row; the fewest HBM bytes wins (more rows per tile re-read the
// weights less often, wider tiles re-read the rows feeding the matmul less often). A decode
// step has one row, so only width is chosen. `size_only`: the smallest tile is enough.
bool plan_columns(TilePlan& t, TileMeasure& m, const Kernel& k, const CodegenOptions& opts, int64_t nbuf,
                  bool size_only) {
  const ColumnSplit& cs = t.columns;
  int64_t G = cs.granule, W = cs.width;
  int64_t hoisted = m.fa.hoisted_bytes();
  int64_t smallest = m(1, G);
  int64_t avail = opts.lmu_bytes - align_up(hoisted, kLmAlign);
  if (smallest * nbuf > avail) return false;
  t.fits = true;
  t.col_tiled = true;
  t.buffers = nbuf;
  t.hoisted = hoisted;
  t.min_lmu_bytes = align_up(hoisted, kLmAlign) + smallest * nbuf;
  if (size_only) return true;
  constexpr int64_t kAlignCols = 32;
  if (W >= 4 * kAlignCols && m(1, std::lcm(G, kAlignCols)) * nbuf <= avail) G = std::lcm(G, kAlignCols);
  int64_t max_rows = opts.max_tile_rows > 0 ? std::min(k.rows, opts.max_tile_rows) : k.rows;
  int64_t best = -1;
  for (int64_t R = 1;; R = std::min(R * 2, max_rows)) {
    if (m(R, G) * nbuf > avail) break;
    int64_t lo = 1, hi = (W + G - 1) / G;  // widest fitting width lo * G (capped at W)
    while (lo < hi) {
      int64_t mid = (lo + hi + 1) / 2;
      if (m(R, std::min(W, mid * G)) * nbuf <= avail)
        lo = mid;
      else
        hi = mid - 1;
    }
    int64_t nc = (W + std::min(W, lo * G) - 1) / std::min(W, lo * G);
    int64_t cw = std::min(W, ((W + nc - 1) / nc + G - 1) / G * G);  // balanced, no wider than what fitted
    nc = (W + cw - 1) / cw;
    int64_t tile_hbm = m.fa.hbm_bytes(0, R, 0, cw);
    int64_t bytes = tile_hbm * ((k.rows + R - 1) / R) * nc;
    if (best < 0 || bytes < best) {
      best = bytes;
      t.rows = R;
      t.cols = cw;
      t.col_tiles = nc;
    }
    if (R >= max_rows) break;
  }
  t.tile_bytes = align_up(m(t.rows, t.cols), kLmAlign);
  return true;
}

// Whether a matrix-engine result feeds vector work in the kernel: its tiles then pipeline
// (codegen/tile_skew.h) only when there are several of them.
bool feeds_vector_work(const LoopProgram& p, const Kernel& k) {
  std::set<std::string> matmul_out;
  for (int i : k.nodes)
    if (const LoopNode& n = p.nodes[static_cast<size_t>(i)]; n.kind == LoopKind::Matmul) matmul_out.insert(n.out());
  if (matmul_out.empty()) return false;
  for (int i : k.nodes) {
    const LoopNode& n = p.nodes[static_cast<size_t>(i)];
    if (n.kind == LoopKind::Matmul) continue;
    for (const auto& l : n.loads())
      if (matmul_out.count(l->buffer)) return true;
  }
  return false;
}

// Rule 1 for a pipelined kernel of several rows: tiles of about 1/kPipelineTiles of its rows, so
// the vector engine works on one tile while the matrix engine streams the next, where that
// moves no more HBM bytes (rows that share a weight stream, a prefill's tokens, keep their tile).
// A tile holds a multiple of 16 rows: 16 fp32 rows make the 64-byte allocation granule, so its
// registers' sizes, and the addresses after them, stay affine in the context (a decode step's
// rows x context scores), which generate's symbolic programs need (isa/program_template.h).
int64_t pipelined_rows(const LoopProgram& p, const Kernel& k, TileFootprintAnalysis& fa, int64_t rows, int64_t nbuf) {
  constexpr int64_t kPipelineTiles = 4;
  constexpr int64_t kGranuleRows = kLmAlign / 4;
  if (nbuf < 2 || rows < 2 * kGranuleRows || !feeds_vector_work(p, k)) return rows;
  const int64_t target = std::max(kGranuleRows, k.rows / kPipelineTiles / kGranuleRows * kGranuleRows);
  if (target >= rows) return rows;
  auto bytes = [&](int64_t r) { return fa.hbm_bytes(0, r, 0, 0) * ((k.rows + r - 1) / r); };
  return bytes(target) <= bytes(rows) ? target : rows;
}

}  // namespace

TilePlan plan_tiles(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts, bool size_only,
                    std::unique_ptr<TileFootprintAnalysis>* footprint, TileAccessCache* cache) {
  int64_t nbuf = opts.double_buffer ? 2 : 1;
  // Without a shared cache each analysis keeps its own (one handed out via `footprint` must).
  auto whole_fa = std::make_unique<TileFootprintAnalysis>(p, k, nullptr, cache, opts.vector_chains);
  TileMeasure whole{*whole_fa, {}};
  TilePlan t;
  t.hoisted = whole_fa->hoisted_bytes();
  int64_t one = whole(1, 0);
  int64_t avail = opts.lmu_bytes - align_up(t.hoisted, kLmAlign);
  t.min_lmu_bytes = align_up(t.hoisted, kLmAlign) + one * nbuf;
  t.one_row_bytes = align_up(t.hoisted, kLmAlign) + one;
  if (one > avail) {  // rules 3 and 4
    t.columns = analyze_column_split(p, k);
    if (!t.columns.ok) return t;
    auto split_fa = std::make_unique<TileFootprintAnalysis>(p, k, &t.columns, cache, opts.vector_chains);
    TileMeasure split{*split_fa, {}};
    if (plan_columns(t, split, k, opts, nbuf, size_only)) {
      t.configured = true;
    } else if (nbuf > 1) {
      plan_columns(t, split, k, opts, 1, size_only);
    }
    if (footprint) *footprint = std::move(split_fa);
    return t;
  }
  if (footprint) *footprint = std::move(whole_fa);
  t.configured = one * nbuf <= avail;
  if (!t.configured) nbuf = 1;  // rule 2
  t.fits = true;
  t.buffers = nbuf;
  if (size_only) return t;
  int64_t two = k.rows > 1 ? whole(2, 0) : one;
  int64_t per_row = std::max<int64_t>(two - one, 1);
  int64_t rows = std::min<int64_t>(k.rows, 1 + (avail / nbuf - one) / per_row);
  if (opts.max_tile_rows > 0) rows = std::min(rows, opts.max_tile_rows);
  rows = std::max<int64_t>(rows, 1);
  // The estimate from one and two rows can be far off (a gathered matmul's rows each hold their
  // own weights' results): the most rows that fit, by bisection (a tile's bytes grow with its
  // rows), rather than one measurement per row dropped.
  if (rows > 1 && whole(rows, 0) * nbuf > avail) {
    int64_t lo = 1, hi = rows;  // lo fits (one row does: checked above), hi does not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (whole(mid, 0) * nbuf > avail ? hi : lo) = mid;
    }
    rows = lo;
  }
  rows = pipelined_rows(p, k, whole.fa, rows, nbuf);
  t.rows = rows;
  t.tile_bytes = align_up(whole(rows, 0), kLmAlign);
  return t;
}

TilePlan plan_from_tiling(const LoopProgram& p, const Kernel& k, const KernelTiling& kt) {
  TilePlan t;
  t.fits = t.configured = true;
  t.rows = kt.tile_rows;
  t.hoisted = kt.hoisted_bytes;
  t.tile_bytes = kt.tile_bytes;
  t.buffers = kt.buffers;
  t.col_tiled = kt.tile_cols > 0;
  t.cols = kt.tile_cols;
  t.col_tiles = kt.col_tiles;
  if (t.col_tiled) t.columns = analyze_column_split(p, k);
  return t;
}

std::pair<int64_t, int64_t> column_window(const TilePlan& t, int64_t j) {
  if (!t.col_tiled) return {0, 0};
  int64_t c0 = j * t.cols;
  return {c0, std::min(t.cols, t.columns.width - c0)};
}
}  // namespace lpu
