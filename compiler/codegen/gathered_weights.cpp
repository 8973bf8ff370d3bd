#include "codegen/gathered_weights.h"

#include <algorithm>

namespace lpu {

namespace {

// B's row base and its strides along K and N, as the emitter reads B (lpu_codegen.cpp, matmul()).
bool b_strides(const LoopNode& mm, Index& b_row, int64_t& ks, int64_t& ns) {
  const Expr& b = mm.body->args.at(1);
  const LoopVar kvar = LoopVar::reduction(0), nvar = mm.column_var();
  b_row = b->index.substitute({{kvar, Index::constant(0)}, {nvar, Index::constant(0)}});
  Index cols = b->index - b_row;
  for (const auto& v : cols.variables())
    if (v != kvar && v != nvar) return false;
  if (!cols.is_affine()) return false;
  ks = cols.coefficient(kvar);
  ns = cols.coefficient(nvar);
  return ks >= 0 && ns >= 0;
}

// Whether matmul `mm` reads the output of gather `g` as its B operand only, row r of the matmul
// inside slab r of the gather (from `offset` on, the same for every row).
bool reads_one_slab_per_row(const LoopNode& mm, const LoopNode& g, int64_t slab, int64_t& offset, int64_t& ks,
                            int64_t& ns) {
  if (mm.kind != LoopKind::Matmul || !mm.body || mm.body->kind != ExprKind::Call || mm.body->args.size() != 2)
    return false;
  const Expr& a = mm.body->args[0];
  const Expr& b = mm.body->args[1];
  if (b->kind != ExprKind::Load || b->buffer != g.out()) return false;
  if (a->kind != ExprKind::Load || a->buffer == g.out()) return false;
  if (mm.rows() != g.rows() || mm.reduction_ranges.size() != 1) return false;
  Index b_row;
  if (!b_strides(mm, b_row, ks, ns)) return false;
  AccessPattern rows;
  rows.row_part = b_row;
  rows.row_vars = mm.row_vars();
  rows.row_sizes = mm.row_sizes();
  for (int64_t r = 0; r < mm.rows(); ++r) {
    const int64_t c = rows.row_offset(r) - r * slab;
    if (r == 0) offset = c;
    if (c != offset) return false;
  }
  const int64_t K = mm.reduction_ranges[0], N = mm.cols();
  return offset >= 0 && offset + ks * (K - 1) + ns * (N - 1) < slab;
}

bool reads_buffer(const LoopNode& n, const std::string& buffer) {
  if (n.gather_table == buffer) return true;
  if (std::find(n.host_inputs.begin(), n.host_inputs.end(), buffer) != n.host_inputs.end()) return true;
  for (const Expr& l : n.loads())
    if (l->buffer == buffer) return true;
  return false;
}

}  // namespace

bool gather_is_elided(const LoopProgram& p, const LoopNode& g) {
  if (g.kind != LoopKind::Gather || !g.gather_index || g.gather_index->kind != ExprKind::Load) return false;
  if (std::find(p.inputs.begin(), p.inputs.end(), g.gather_table) == p.inputs.end()) return false;
  if (std::find(p.outputs.begin(), p.outputs.end(), g.out()) != p.outputs.end()) return false;
  const int64_t slab = g.cols();
  bool read = false;
  for (const LoopNode& n : p.nodes) {
    if (&n == &g) continue;
    if (n.out() == g.out()) return false;  // written by another node too
    if (!reads_buffer(n, g.out())) continue;
    int64_t offset = 0, ks = 0, ns = 0;
    if (!reads_one_slab_per_row(n, g, slab, offset, ks, ns)) return false;
    read = true;
  }
  return read;
}

std::optional<GatheredWeights> gathered_weights(const LoopProgram& p, const LoopNode& mm) {
  if (mm.kind != LoopKind::Matmul || !mm.body || mm.body->args.size() != 2) return std::nullopt;
  const Expr& b = mm.body->args[1];
  if (b->kind != ExprKind::Load) return std::nullopt;
  auto buf = p.buffers.find(b->buffer);
  if (buf == p.buffers.end() || buf->second.role != BufferRole::Intermediate)
    return std::nullopt;  // weights as they are
  const auto writers = p.writers(b->buffer);
  if (writers.size() != 1 || !gather_is_elided(p, *writers[0])) return std::nullopt;
  const LoopNode& g = *writers[0];
  GatheredWeights gw;
  gw.gather = &g;
  gw.slab = g.cols();
  if (!reads_one_slab_per_row(mm, g, gw.slab, gw.offset, gw.ks, gw.ns)) return std::nullopt;
  // Matmul row r reads gather row r: the gather's index with its row variables spelled from the
  // matmul's flattened row.
  const auto mvars = mm.row_vars();
  const auto msizes = mm.row_sizes();
  Index flat = Index::constant(0);
  for (size_t k = 0; k < mvars.size(); ++k) flat = flat * msizes[k] + Index::var(mvars[k]);
  const auto gvars = g.row_vars();
  const auto gsizes = g.row_sizes();
  std::map<LoopVar, Index> env;
  int64_t stride = 1;
  for (size_t k = gvars.size(); k-- > 0;) {
    env[gvars[k]] = flat.floordiv(stride).mod(gsizes[k]);
    stride *= gsizes[k];
  }
  const Expr& ix = g.gather_index;
  gw.row_index = make_load(ix->buffer, ix->index.substitute(env).simplify(mm.var_ranges()), ix->dtype);
  return gw;
}

}  // namespace lpu
