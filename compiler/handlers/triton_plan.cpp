// Triton kernels: how each scheduled kernel runs (plan_module: mode, grid, the buffers it passes).
// The modes and their conditions are described in triton_source.h.
#include <algorithm>

#include "handlers/triton_internal.h"
#include "support/error.h"

namespace lpu::triton {

std::vector<std::string> node_reads(const LoopNode& n) {
  std::vector<std::string> out;
  auto add = [&](const std::string& b) {
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  if (is_opaque(n.kind)) {
    for (const auto& b : n.host_inputs) add(b);
    return out;
  }
  if (n.kind == LoopKind::Gather) {
    add(n.gather_table);
    LoopNode idx;
    idx.body = n.gather_index;
    for (const auto& l : idx.loads()) add(l->buffer);
  }
  if (n.body)
    for (const auto& l : n.loads()) add(l->buffer);
  return out;
}

std::vector<Expr> node_loads(const LoopNode& n) {
  std::vector<Expr> out;
  if (n.kind == LoopKind::Gather) {
    LoopNode idx;
    idx.body = n.gather_index;
    out = idx.loads();
  }
  if (n.body && !is_opaque(n.kind))
    for (const auto& l : n.loads()) out.push_back(l);
  return out;
}

namespace {

Expr strip_casts(Expr e) {
  while (e && e->kind == ExprKind::Cast) e = e->args[0];
  return e;
}

// A matmul node that tl.dot can run: sum over r0 of mul(load A, load B) with A over (m, r0) and
// B over (r0, n), m and n the last two output dims.
}  // namespace

bool dot_operands(const LoopNode& n, Expr& a, Expr& b) {
  if (n.kind != LoopKind::Matmul || n.ranges.size() < 2 || n.reduction_ranges.size() != 1 ||
      n.reduction != ReductionType::sum || !n.body)
    return false;
  Expr body = strip_casts(n.body);
  if (body->kind != ExprKind::Call || body->op != ScalarOp::mul) return false;
  Expr x = strip_casts(body->args[0]), y = strip_casts(body->args[1]);
  if (x->kind != ExprKind::Load || y->kind != ExprKind::Load) return false;
  const LoopVar m = LoopVar::output(n.ranges.size() - 2), nv = n.column_var(), k = LoopVar::reduction(0);
  auto is_a = [&](const Expr& e) {
    return e->index.depends_on(m) && e->index.depends_on(k) && !e->index.depends_on(nv);
  };
  auto is_b = [&](const Expr& e) {
    return e->index.depends_on(nv) && e->index.depends_on(k) && !e->index.depends_on(m);
  };
  if (is_a(y) && is_b(x)) std::swap(x, y);
  if (!is_a(x) || !is_b(y)) return false;
  a = x;
  b = y;
  return true;
}

int64_t tile(int64_t n, int64_t cap) { return std::max<int64_t>(16, std::min(next_pow2(n), cap)); }
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A matmul's column blocks spread its weights over the programs; a pointwise node keeps a whole
// row (up to 4096 columns) in one item, so that it lines up with the reductions around it and a
// CTA barrier is enough between them (emit_kernel).
int64_t grid_block(const LoopNode& n) {
  if (n.kind == LoopKind::Reduction || n.ranges.empty()) return 0;
  return std::min<int64_t>(next_pow2(n.ranges.back()), n.kind == LoopKind::Matmul ? 64 : 4096);
}
int64_t grid_col_blocks(const LoopNode& n) {
  int64_t b = grid_block(n);
  return b ? cdiv(n.ranges.back(), b) : 1;
}

namespace {

// The columns of a load in its node's row/column view (a matmul's A operand walks r0).
AccessPattern load_pattern(const LoopNode& c, const Index& idx, int64_t& cols) {
  cols = c.cols();
  if (c.kind == LoopKind::Matmul && idx.depends_on(LoopVar::reduction(0))) {
    const LoopVar nv = c.column_var();
    if (idx.depends_on(nv)) {
      AccessPattern bad;
      bad.why_not = "reads a kernel-local buffer over both K and N";
      return bad;
    }
    cols = numel(c.reduction_ranges);
    return analyze_access(c, idx, {LoopVar::reduction(0)}, {cols});
  }
  return analyze_access(c, idx);
}

// Why node `c`'s load `l` of a buffer that earlier nodes `ws` of its kernel wrote might read
// outside the row that the same row of `ws` wrote ("" when it cannot). `exact`: it reads exactly
// the element written at the same (row, column), so column blocks may be split too.
}  // namespace

std::string local_read_problem(const LoopNode& c, const Expr& l, const std::vector<const LoopNode*>& ws, bool& exact) {
  exact = true;
  int64_t rows = c.rows();
  int64_t ccols = 0;
  AccessPattern rp = load_pattern(c, l->index, ccols);
  if (!rp.ok) return strcat("node ", c.name, ": load of ", l->buffer, ": ", rp.why_not);
  if (rp.col_split) return strcat("node ", c.name, ": load of ", l->buffer, " has two-level columns");
  int64_t cs = ccols == 1 ? 0 : rp.col_stride;
  if (cs != 0 && cs != 1) return strcat("node ", c.name, ": load of ", l->buffer, " is strided");
  for (const LoopVar& v : l->index.variables())
    if (v.kind == LoopVar::Kind::Reduction) exact = false;
  std::vector<std::pair<const LoopNode*, AccessPattern>> wp;
  for (const LoopNode* wn : ws) {
    AccessPattern sp = analyze_access(*wn, wn->store_index);
    if (!sp.ok) return strcat("node ", wn->name, ": store: ", sp.why_not);
    if (sp.col_split || (wn->out_cols() > 1 && sp.col_stride != 1))
      return strcat("node ", wn->name, ": strided store of ", l->buffer);
    wp.emplace_back(wn, sp);
    if (!(ws.size() == 1 && sp.col_stride == cs && wn->out_cols() == ccols && cs == 1)) exact = false;
  }
  bool affine = rp.row_affine;
  for (auto& [wn, sp] : wp) affine = affine && sp.row_affine && sp.row_stride == rp.row_stride;
  int64_t check_rows = affine ? 1 : rows;
  if (check_rows > 65536) return strcat("node ", c.name, ": load of ", l->buffer, " is not row-affine");
  for (int64_t r = 0; r < check_rows; ++r) {
    std::vector<std::pair<int64_t, int64_t>> iv;  // what the writers wrote at row r
    for (auto& [wn, sp] : wp) {
      int64_t o = sp.row_offset(r);
      iv.emplace_back(o, o + wn->out_cols() - 1);
    }
    std::sort(iv.begin(), iv.end());
    int64_t lo = rp.row_offset(r), hi = lo + (cs ? ccols - 1 : 0);
    for (const auto& [a, b] : iv)
      if (a <= lo && lo <= b) lo = b + 1;
    if (lo <= hi)
      return strcat("node ", c.name, " reads ", l->buffer, " outside the row its writers wrote (row ", r, ")");
    if (affine && rp.row_offset(r) != wp.front().second.row_offset(r)) exact = false;
  }
  return "";
}

namespace {

// Why one program per row cannot run the kernel ("" when it can): every read of a buffer the
// kernel itself writes must stay inside the row that wrote it. `split` says whether it is also
// column-local (program (row, column block) sees only what it wrote).
std::string rows_problem(const LoopProgram& p, const Kernel& k, bool& split) {
  split = true;
  std::map<std::string, std::vector<const LoopNode*>> writers;
  int64_t rows = -1, cols = -1;
  for (int i : k.nodes) {
    const LoopNode& c = p.nodes.at(static_cast<size_t>(i));
    if (rows < 0) rows = c.rows();
    if (c.rows() != rows) return strcat("node ", c.name, " has ", c.rows(), " rows, the kernel's first node ", rows);
    if (c.kind == LoopKind::Reduction || c.ranges.empty()) split = false;
    if (cols < 0) cols = c.cols();
    if (c.cols() != cols) split = false;
    if (c.kind == LoopKind::Gather && writers.count(c.gather_table))
      return strcat("node ", c.name, " gathers from ", c.gather_table, ", written in the same kernel");
    for (const auto& l : node_loads(c)) {
      auto w = writers.find(l->buffer);
      if (w == writers.end()) continue;
      bool exact = true;
      std::string why = local_read_problem(c, l, w->second, exact);
      if (!why.empty()) return why;
      if (!exact) split = false;
    }
    writers[c.out()].push_back(&c);
  }
  if (cols <= 1) split = false;
  return "";
}

}  // namespace

ModulePlan plan_module(const LoopProgram& p, const Schedule& s) {
  if (s.kernels.empty()) throw InputError("Triton handler: program " + p.name + " has no kernels");
  ModulePlan mp;
  std::set<std::string> available(p.inputs.begin(), p.inputs.end());
  for (const auto& in : p.inputs) {
    mp.storage[in] = "input";
    mp.buffers.push_back(in);
  }
  for (const auto& k : s.kernels) {
    KernelPlan kp;
    kp.kernel = &k;
    std::set<std::string> produced, hbm(k.hbm_outputs.begin(), k.hbm_outputs.end());
    auto add = [](std::vector<std::string>& v, const std::string& b) {
      if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
    };
    bool host = false;
    for (int idx : k.nodes) {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(idx));
      host = host || is_opaque(n.kind);
      for (const auto& b : node_reads(n)) {
        if (!available.count(b) && !produced.count(b))
          throw InputError(strcat("kernel ", k.name, ", node ", n.name, ": reads ", b,
                                  ", which no input or earlier kernel provides"));
        if (!produced.count(b)) add(kp.reads, b);
        add(kp.args, b);
      }
      if (n.kind == LoopKind::Gather) {
        const Buffer& t = p.buffers.at(n.gather_table);
        int64_t cols = n.ranges.empty() ? 1 : n.ranges.back();
        LoopNode idx_node;
        idx_node.body = n.gather_index;
        for (const auto& l : idx_node.loads()) mp.index_bound[l->buffer] = t.type.numel() / std::max<int64_t>(cols, 1);
      }
      produced.insert(n.out());
      add(kp.writes, n.out());
      add(kp.args, n.out());
      if (!mp.storage.count(n.out())) {
        mp.storage[n.out()] = "scratch";
        mp.buffers.push_back(n.out());
      }
    }
    for (const auto& b : k.hbm_outputs) {
      if (!produced.count(b))
        throw InputError(strcat("kernel ", k.name, ": HBM output ", b, " is written by none of its nodes"));
      if (mp.storage[b] != "input") mp.storage[b] = "hbm";
    }
    kp.fn = "tk_" + py_ident(k.name);
    const LoopNode& first = p.nodes.at(static_cast<size_t>(k.nodes.front()));
    Expr a, b;
    if (host) {
      if (k.nodes.size() != 1) throw InputError("kernel " + k.name + ": a graph break fused with other nodes");
      kp.mode = "host";
      kp.fn = "";
    } else if (k.nodes.size() == 1 && dot_operands(first, a, b)) {
      kp.mode = "dot";
      int64_t m = first.ranges[first.ranges.size() - 2], n = first.ranges.back();
      int64_t batch = 1;
      for (size_t i = 0; i + 2 < first.ranges.size(); ++i) batch *= first.ranges[i];
      kp.grid = {batch * cdiv(m, tile(m, 64)), cdiv(n, tile(n, 64))};
    } else {
      bool split = false;
      kp.why_not_rows = rows_problem(p, k, split);
      bool has_mm = false;
      for (int idx : k.nodes) has_mm = has_mm || p.nodes.at(static_cast<size_t>(idx)).kind == LoopKind::Matmul;
      if (kp.why_not_rows.empty() && (split || !has_mm)) {
        kp.mode = "rows";
        int64_t cols = first.cols();
        kp.block = split ? std::min(next_pow2(cols), has_mm ? int64_t{64} : int64_t{1024}) : 0;
        kp.grid = {first.rows(), split ? cdiv(cols, kp.block) : 1};
      } else {
        // A matmul that one program per row would run alone, or rows that read each other:
        // every program of the grid shares each node's work, with a grid barrier between nodes.
        if (kp.why_not_rows.empty()) kp.why_not_rows = "a matmul fused with nodes that are not column-local";
        kp.mode = "grid";
        kp.grid = {0};  // one program per SM, chosen by the launcher
      }
    }
    available.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    mp.kernels.push_back(kp);
  }
  return mp;
}

}  // namespace lpu::triton
