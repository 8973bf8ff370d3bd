#include "loopir/loop_ir.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "graph/attrs_json.h"
#include "graph/ops.h"
#include "support/error.h"

namespace lpu {

std::vector<LoopVar> LoopNode::row_vars() const {
  size_t n = kind != LoopKind::Reduction && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  return loop_vars(LoopVar::Kind::Output, n);
}

std::vector<int64_t> LoopNode::row_sizes() const {
  size_t n = kind != LoopKind::Reduction && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  return {ranges.begin(), ranges.begin() + static_cast<long>(n)};
}

std::vector<LoopVar> LoopNode::col_vars() const {
  if (kind == LoopKind::Reduction) return loop_vars(LoopVar::Kind::Reduction, reduction_ranges.size());
  if (ranges.empty()) return {};
  return {column_var()};
}

std::map<LoopVar, int64_t> LoopNode::var_ranges() const {
  std::map<LoopVar, int64_t> r;
  for (size_t i = 0; i < ranges.size(); ++i) r[LoopVar::output(i)] = ranges[i];
  for (size_t i = 0; i < reduction_ranges.size(); ++i) r[LoopVar::reduction(i)] = reduction_ranges[i];
  return r;
}

std::vector<int64_t> LoopNode::col_sizes() const {
  if (kind == LoopKind::Reduction) return reduction_ranges;
  if (ranges.empty()) return {};
  return {ranges.back()};
}

namespace {
// numel of v[begin, end) without copying it: rows() and cols() run in the scheduler's inner
// loops. An overflow goes through numel for its usual error.
int64_t product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    if (__builtin_mul_overflow(p, v[i], &p))
      return numel(Shape(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end)));
  return p;
}
}  // namespace

int64_t LoopNode::rows() const {
  size_t n = kind != LoopKind::Reduction && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  return product(ranges, 0, n);
}
int64_t LoopNode::cols() const {
  if (kind == LoopKind::Reduction) return product(reduction_ranges, 0, reduction_ranges.size());
  return ranges.empty() ? 1 : ranges.back();
}
int64_t LoopNode::out_cols() const { return kind == LoopKind::Reduction ? 1 : cols(); }

namespace {
// A body is a DAG (shared subexpressions): each node is visited once.
void collect_loads(const Expr& e, std::set<const ExprNode*>& visited, std::set<std::string>& seen,
                   std::vector<Expr>& out) {
  if (!visited.insert(e.get()).second) return;
  if (e->kind == ExprKind::Load) {
    if (seen.insert(e->buffer + "[" + e->index.str() + "]").second) out.push_back(e);
    return;
  }
  for (const auto& a : e->args) collect_loads(a, visited, seen, out);
}

void collect_buffers(const Expr& e, std::set<const ExprNode*>& visited, std::set<std::string>& out) {
  if (!visited.insert(e.get()).second) return;
  if (e->kind == ExprKind::Load) {
    out.insert(e->buffer);
    return;
  }
  for (const auto& a : e->args) collect_buffers(a, visited, out);
}
}  // namespace

std::vector<Expr> LoopNode::loads() const {
  std::vector<Expr> out;
  std::set<std::string> seen;
  std::set<const ExprNode*> visited;
  if (body) collect_loads(body, visited, seen, out);
  if (gather_index) collect_loads(gather_index, visited, seen, out);
  for (const auto& b : host_inputs)  // a host node reads each operand buffer whole
    if (seen.insert(b + "[host]").second) out.push_back(make_load(b, Index(), dtype));
  if (!gather_table.empty() && seen.insert(gather_table + "[gather]").second)
    out.push_back(make_load(gather_table, Index(), dtype));  // the table, read indirectly
  return out;
}

std::set<std::string> LoopNode::loaded_buffers() const {
  std::set<std::string> out;
  std::set<const ExprNode*> visited;
  if (body) collect_buffers(body, visited, out);
  if (gather_index) collect_buffers(gather_index, visited, out);
  out.insert(host_inputs.begin(), host_inputs.end());
  if (!gather_table.empty()) out.insert(gather_table);
  return out;
}

namespace {
// Coefficients of `vars` (sizes `sizes`) must be s * (row-major flattening weights).
bool flattened_stride(const Index& idx, const std::vector<LoopVar>& vars, const std::vector<int64_t>& sizes,
                      int64_t& stride) {
  stride = 0;
  bool have = false;
  int64_t weight = 1;
  for (size_t k = vars.size(); k-- > 0;) {
    int64_t c = idx.coefficient(vars[k]);
    if (sizes[k] != 1) {
      if (!have) {
        stride = c / weight;
        if (c % weight != 0) return false;
        have = true;
      }
      if (c != stride * weight) return false;
    }
    weight *= sizes[k];
  }
  return true;
}

// The divisor of the first `kind` atom (floordiv or mod) of exactly `v` in the text order of
// `idx` (an atom before the atoms inside it), 0 when there is none: how a column split by a
// permuted-then-merged view shows its split.
int64_t split_divisor(const Index& idx, const LoopVar& v, IndexAtom::Kind kind) {
  for (const auto& [coef, a] : idx.terms()) {
    if (a.kind == IndexAtom::Var) continue;
    if (a.kind == kind && *a.arg == Index::var(v)) return a.divisor;
    if (int64_t d = split_divisor(*a.arg, v, kind)) return d;
  }
  return 0;
}
}  // namespace

int64_t AccessPattern::row_offset(int64_t row) const {
  if (row_affine) return base + row_stride * row;
  // The tile-footprint analysis asks this per tile and row: one map per thread whose keys (the
  // row variables i0, i1, ...) stay between calls, so no call allocates. Every variable of
  // row_part is a row variable (analyze_access), each set here before it is read.
  thread_local std::map<LoopVar, int64_t> env;
  for (size_t k = row_vars.size(); k-- > 0;) {
    env[row_vars[k]] = row % row_sizes[k];
    row /= row_sizes[k];
  }
  return row_part.evaluate(env);
}

AccessPattern analyze_access(const LoopNode& node, const Index& index) {
  return analyze_access(node, index, node.col_vars(), node.col_sizes());
}

AccessPattern analyze_access(const LoopNode& node, const Index& index, const std::vector<LoopVar>& cv,
                             const std::vector<int64_t>& col_sizes) {
  AccessPattern p;
  p.row_vars = node.row_vars();
  p.row_sizes = node.row_sizes();
  std::set<LoopVar> rows(p.row_vars.begin(), p.row_vars.end()), cols(cv.begin(), cv.end());
  for (const auto& v : index.variables())
    if (!rows.count(v) && !cols.count(v)) {
      p.why_not = "index " + index.str() + " uses variable " + v.name() + ", which is neither a row nor a column here";
      return p;
    }
  // Columns must enter as plain terms (no floordiv/mod around a column variable).
  std::map<LoopVar, Index> zero_cols;
  for (const auto& c : cv) zero_cols[c] = Index::constant(0);
  p.row_part = index.substitute(zero_cols);
  Index col_part = index - p.row_part;
  if (!col_part.is_affine()) {
    // v = D*(v//D) + v%D: a*v + b*(v//D) + e*(v%D) is two strided levels over one column var.
    std::vector<LoopVar> live;
    for (size_t k = 0; k < cv.size(); ++k)
      if (col_sizes[k] != 1) live.push_back(cv[k]);
    Index v = live.size() == 1 ? Index::var(live[0]) : Index();
    int64_t D = 0;
    if (live.size() == 1) {
      D = split_divisor(col_part, live[0], IndexAtom::FloorDiv);
      if (D == 0) D = split_divisor(col_part, live[0], IndexAtom::Mod);
    }
    if (D > 1) {
      Index div = v.floordiv(D), mod = v.mod(D);
      int64_t a = col_part.coefficient(live[0]);
      // Coefficients of the atoms: probe by substituting v with known values.
      auto at_v = [&](int64_t x) { return col_part.evaluate({{live[0], x}}); };
      int64_t e = at_v(1) - at_v(0) - a;          // from v%D at v=1 (div part 0)
      int64_t b = at_v(D) - at_v(0) - a * D;      // from v//D at v=D (mod part 0)
      Index rebuilt = Index::var(live[0]) * a + div * b + mod * e;
      if (rebuilt == col_part) {
        p.col_split = D;
        p.col_outer_stride = a * D + b;
        p.col_stride = a + e;
        p.ok = true;
        p.base = p.row_part.constant_part();
        p.row_affine = p.row_part.is_affine() && flattened_stride(p.row_part, p.row_vars, p.row_sizes, p.row_stride);
        return p;
      }
    }
    p.why_not = "index " + index.str() + " splits a column with floordiv/mod";
    return p;
  }
  for (const auto& v : col_part.variables())
    if (!cols.count(v)) {
      p.why_not = "index " + index.str() + " mixes rows and columns inside floordiv/mod";
      return p;
    }
  if (!flattened_stride(col_part, cv, col_sizes, p.col_stride)) {
    p.why_not = "index " + index.str() + " is not one stride over the flattened columns";
    return p;
  }
  p.ok = true;
  p.base = p.row_part.constant_part();
  p.row_affine = p.row_part.is_affine() && flattened_stride(p.row_part, p.row_vars, p.row_sizes, p.row_stride);
  return p;
}

std::vector<const LoopNode*> LoopProgram::writers(const std::string& buffer) const {
  std::vector<const LoopNode*> w;
  for (const auto& n : nodes)
    if (n.out() == buffer) w.push_back(&n);
  return w;
}

std::string print_loop_node(const LoopNode& n, const std::map<std::string, DType>* buffer_dtypes) {
  std::ostringstream os;
  auto ranges = [](const std::vector<int64_t>& r, LoopVar::Kind kind) {
    std::string s = "[";
    for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + LoopVar{kind, i}.name() + " < " + std::to_string(r[i]);
    return s + "]";
  };
  auto ex = [&](const Expr& e) { return expr_str(e, buffer_dtypes); };
  // The exact form names the graph node a loop node came from when it is another one.
  const std::string from = buffer_dtypes && !n.origin.empty() && n.origin != n.name ? " from " + n.origin : "";
  const std::string& target = n.out();
  if (n.kind == LoopKind::Pointwise) {
    os << n.name << " = pointwise " << ranges(n.ranges, LoopVar::Kind::Output) << " " << dtype_name(n.dtype) << from << "\n";
    os << "  " << target << "[" << n.store_index.str() << "] = " << ex(n.body) << "\n";
  } else if (is_opaque(n.kind)) {
    os << n.name << (n.kind == LoopKind::Host ? " = host " : " = collective ") << ranges(n.ranges, LoopVar::Kind::Output)
       << " " << dtype_name(n.dtype) << from
       << (n.kind == LoopKind::Host ? "   ; graph break\n" : "   ; over the ESL\n");
    os << "  " << target << "[" << n.store_index.str() << "] = " << n.host_op << "(";
    for (size_t i = 0; i < n.host_inputs.size(); ++i) os << (i ? ", " : "") << n.host_inputs[i];
    os << ")";
    if (buffer_dtypes && !n.host_attrs.empty()) os << " " << attrs_to_json(n.host_attrs);
    os << "\n";
  } else if (n.kind == LoopKind::Gather) {
    os << n.name << " = gather " << ranges(n.ranges, LoopVar::Kind::Output) << " " << dtype_name(n.dtype) << from << "\n";
    os << "  " << target << "[" << n.store_index.str() << "] = " << n.gather_table << "[" << ex(n.gather_index)
       << ", i" << n.ranges.size() - 1 << "]\n";
  } else if (n.kind == LoopKind::Matmul) {
    os << n.name << " = matmul " << ranges(n.ranges, LoopVar::Kind::Output) << " over " << ranges(n.reduction_ranges, LoopVar::Kind::Reduction) << " "
       << dtype_name(n.dtype) << from << "\n";
    os << "  " << target << "[" << n.store_index.str() << "] = sum_r " << ex(n.body) << "\n";
  } else {
    os << n.name << " = reduction." << reduction_type_name(n.reduction) << " " << ranges(n.ranges, LoopVar::Kind::Output) << " over "
       << ranges(n.reduction_ranges, LoopVar::Kind::Reduction) << " " << dtype_name(n.dtype) << from << "\n";
    os << "  " << target << "[" << n.store_index.str() << "] = " << reduction_type_name(n.reduction) << "_r "
       << ex(n.body) << "\n";
  }
  return os.str();
}

std::string print_loop_ir(const LoopProgram& p) {
  std::ostringstream os;
  os << "loop_ir " << p.name << "\n";
  os << "buffers:\n";
  std::set<std::string> listed;
  auto list = [&](const std::string& name) {
    if (!listed.insert(name).second) return;
    const Buffer& b = p.buffers.at(name);
    os << "  " << b.name << ": " << type_str(b.type) << " " << buffer_role_name(b.role)
       << (b.quant.on() ? " " + quant_str(b.quant) : "") << "\n";
  };
  for (const auto& name : p.inputs) list(name);
  for (const auto& n : p.nodes) list(n.out());
  for (const auto& [name, b] : p.buffers) list(name);  // any buffer no node writes
  auto names = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s + "]";
  };
  os << "inputs: " << names(p.inputs) << "\n";
  os << "outputs: " << names(p.outputs) << "\n";
  if (!p.constants.empty()) {
    os << "constants:\n";
    for (const auto& [k, v] : p.constants) os << "  " << k << " = " << format_double(v) << "\n";
  }
  std::map<std::string, DType> dtypes;
  for (const auto& [name, b] : p.buffers) dtypes[name] = b.type.dtype;
  os << "nodes:\n";
  for (const auto& n : p.nodes) os << print_loop_node(n, &dtypes);
  return os.str();
}

}  // namespace lpu
