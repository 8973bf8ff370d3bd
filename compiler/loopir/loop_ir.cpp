#include "loopir/loop_ir.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "graph/attrs_json.h"
#include "graph/collective.h"
#include "graph/ops.h"
#include "support/error.h"

namespace lpu {

std::vector<std::string> LoopNode::row_vars() const {
  std::vector<std::string> v;
  size_t n = kind != LoopKind::Reduction && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  for (size_t i = 0; i < n; ++i) v.push_back(LoopVar::output(i).name());
  return v;
}

std::vector<int64_t> LoopNode::row_sizes() const {
  size_t n = kind != LoopKind::Reduction && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  return {ranges.begin(), ranges.begin() + static_cast<long>(n)};
}

std::vector<std::string> LoopNode::col_vars() const {
  if (kind == LoopKind::Reduction) {
    return loop_var_names(LoopVar::Kind::Reduction, reduction_ranges.size());
  }
  if (ranges.empty()) return {};
  return {LoopVar::output(ranges.size() - 1).name()};
}

std::map<std::string, int64_t> LoopNode::var_ranges() const {
  std::map<std::string, int64_t> r;
  for (size_t i = 0; i < ranges.size(); ++i) r[LoopVar::output(i).name()] = ranges[i];
  for (size_t i = 0; i < reduction_ranges.size(); ++i) r[LoopVar::reduction(i).name()] = reduction_ranges[i];
  return r;
}

std::vector<int64_t> LoopNode::col_sizes() const {
  if (kind == LoopKind::Reduction) return reduction_ranges;
  if (ranges.empty()) return {};
  return {ranges.back()};
}

int64_t LoopNode::rows() const { return numel(row_sizes()); }
int64_t LoopNode::cols() const { return numel(col_sizes()); }
int64_t LoopNode::out_cols() const { return kind == LoopKind::Reduction ? 1 : cols(); }

std::vector<Expr> LoopNode::loads() const {
  std::vector<Expr> out;
  std::set<std::string> seen;
  std::set<const ExprNode*> visited;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!visited.insert(e.get()).second) return;
    if (e->kind == ExprKind::Load) {
      if (seen.insert(e->buffer + "[" + e->index.str() + "]").second) out.push_back(e);
      return;
    }
    for (const auto& a : e->args) walk(a);
  };
  if (body) walk(body);
  if (gather_index) walk(gather_index);
  for (const auto& b : host_inputs)  // a host node reads each operand buffer whole
    if (seen.insert(b + "[host]").second) out.push_back(make_load(b, Index(), dtype));
  if (!gather_table.empty() && seen.insert(gather_table + "[gather]").second)
    out.push_back(make_load(gather_table, Index(), dtype));  // the table, read indirectly
  return out;
}

namespace {
// Coefficients of `vars` (sizes `sizes`) must be s * (row-major flattening weights).
bool flattened_stride(const Index& idx, const std::vector<std::string>& vars, const std::vector<int64_t>& sizes,
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
}  // namespace

int64_t AccessPattern::row_offset(int64_t row) const {
  if (row_affine) return base + row_stride * row;
  std::map<std::string, int64_t> env;
  for (size_t k = row_vars.size(); k-- > 0;) {
    env[row_vars[k]] = row % row_sizes[k];
    row /= row_sizes[k];
  }
  return row_part.evaluate(env);
}

AccessPattern analyze_access(const LoopNode& node, const Index& index) {
  return analyze_access(node, index, node.col_vars(), node.col_sizes());
}

AccessPattern analyze_access(const LoopNode& node, const Index& index, const std::vector<std::string>& cv,
                             const std::vector<int64_t>& col_sizes) {
  AccessPattern p;
  p.row_vars = node.row_vars();
  p.row_sizes = node.row_sizes();
  std::set<std::string> rows(p.row_vars.begin(), p.row_vars.end()), cols(cv.begin(), cv.end());
  for (const auto& v : index.variables())
    if (!rows.count(v) && !cols.count(v)) {
      p.why_not = "index " + index.str() + " uses variable " + v + ", which is neither a row nor a column here";
      return p;
    }
  // Columns must enter as plain terms (no floordiv/mod around a column variable).
  std::map<std::string, Index> zero_cols;
  for (const auto& c : cv) zero_cols[c] = Index::constant(0);
  p.row_part = index.substitute(zero_cols);
  Index col_part = index - p.row_part;
  if (!col_part.is_affine()) {
    // v = D*(v//D) + v%D: a*v + b*(v//D) + e*(v%D) is two strided levels over one column var.
    std::vector<std::string> live;
    for (size_t k = 0; k < cv.size(); ++k)
      if (col_sizes[k] != 1) live.push_back(cv[k]);
    Index v = live.size() == 1 ? Index::var(live[0]) : Index();
    int64_t D = 0;
    // Find the divisor from the text of a floordiv/mod atom of v.
    std::string t = col_part.str();
    if (live.size() == 1) {
      std::string pat = "(" + live[0] + ")//";
      auto at = t.find(pat);
      if (at == std::string::npos) {
        pat = "(" + live[0] + ")%";
        at = t.find(pat);
      }
      if (at != std::string::npos) D = std::stoll(t.substr(at + pat.size()));
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

namespace {

std::vector<int64_t> contiguous_strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

Index contiguous_index(const Shape& shape, const std::vector<std::string>& vars) {
  auto st = contiguous_strides_of(shape);
  Index idx;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) idx = idx + Index::var(vars[d]) * st[d];
  return idx;
}

}  // namespace

namespace {

using Idx = std::vector<Index>;

// How the loop IR reads a graph value: element `idx` (one Index per dim of the value) of a
// buffer through an index function, or a constant. Views compose these functions, so a
// reshape/permute/expand/slice never moves data (TorchInductor's views, re-done).
struct ValueAccess {
  bool constant = false;
  double value = 0;
  std::string buffer;
  DType dtype = DType::f32;
  Shape shape;
  std::function<Index(const Idx&)> index;
};

ValueAccess buffer_access(const std::string& name, const TensorType& t) {
  ValueAccess a;
  a.buffer = name;
  a.dtype = t.dtype;
  a.shape = t.shape;
  auto st = contiguous_strides_of(t.shape);
  a.index = [st](const Idx& idx) {
    Index r;
    for (size_t d = 0; d < idx.size(); ++d) r = r + idx[d] * st[d];
    return r;
  };
  return a;
}

ValueAccess view_access(const Node& n, const ValueAccess& x) {
  ValueAccess v = x;
  v.shape = n.type.shape;
  const Shape xs = x.shape;
  auto inner = x.index;
  if (n.op == "reshape") {
    auto ost = contiguous_strides_of(n.type.shape);
    auto xst = contiguous_strides_of(xs);
    v.index = [=](const Idx& idx) {
      Index flat;
      for (size_t d = 0; d < idx.size(); ++d) flat = flat + idx[d] * ost[d];
      Idx xi(xs.size());
      for (size_t d = 0; d < xs.size(); ++d) {
        Index q = flat.floordiv(xst[d]);
        xi[d] = d == 0 ? q : q.mod(xs[d]);
      }
      return inner(xi);
    };
  } else if (n.op == "permute") {
    auto dims = n.attr_ints("dims");
    int64_t r = static_cast<int64_t>(xs.size());
    v.index = [=](const Idx& idx) {
      Idx xi(xs.size());
      for (size_t k = 0; k < dims.size(); ++k) xi[static_cast<size_t>(dims[k] < 0 ? dims[k] + r : dims[k])] = idx[k];
      return inner(xi);
    };
  } else if (n.op == "expand") {
    size_t off = n.type.shape.size() - xs.size();
    v.index = [=](const Idx& idx) {
      Idx xi(xs.size());
      for (size_t d = 0; d < xs.size(); ++d) xi[d] = xs[d] == 1 ? Index::constant(0) : idx[off + d];
      return inner(xi);
    };
  } else if (n.op == "slice") {
    int64_t dim = normalize_dims({n.attr_int("dim")}, static_cast<int>(xs.size()), n)[0];
    int64_t size = xs[static_cast<size_t>(dim)];
    int64_t start = n.attr_int("start", 0), step = n.attr_int("step", 1);
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    v.index = [=](const Idx& idx) {
      Idx xi = idx;
      xi[static_cast<size_t>(dim)] = idx[static_cast<size_t>(dim)] * step + Index::constant(start);
      return inner(xi);
    };
  } else {
    throw InternalError("no view lowering for " + n.op);
  }
  return v;
}

}  // namespace

LoopProgram lower_to_loop_ir(const Graph& core, const LoweringOptions& opts) {
  LoopProgram p;
  p.name = core.name();
  auto outs = core.outputs();
  std::set<NodeId> out_set(outs.begin(), outs.end());
  std::map<std::string, ValueAccess> access;

  auto add_buffer = [&](const std::string& name, const TensorType& t, BufferRole role) {
    Buffer b;
    b.name = name;
    b.type = t;
    b.role = role;
    b.strides = contiguous_strides_of(t.shape);
    p.buffers[name] = b;
  };

  // A load of value `a` at per-dim indices `idx`, simplified with the node's variable ranges.
  auto load = [&](const ValueAccess& a, const Idx& idx, const std::map<std::string, int64_t>& ranges) -> Expr {
    if (a.constant) return make_constant(a.value, a.dtype);
    return make_load(a.buffer, a.index(idx).simplify(ranges), a.dtype);
  };
  // Per-dim indices that broadcast a value of shape `s` into an iteration over `vars` (shape `out`).
  auto broadcast_idx = [](const Shape& s, const Shape& out, const std::vector<std::string>& vars) {
    Idx idx(s.size());
    size_t off = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) idx[d] = s[d] == 1 ? Index::constant(0) : Index::var(vars[off + d]);
    return idx;
  };
  auto ranges_of = [](const LoopNode& ln) { return ln.var_ranges(); };
  auto finish = [&](LoopNode ln, const Node& n) {
    add_buffer(ln.output, n.type, BufferRole::Intermediate);
    access[n.name] = buffer_access(ln.output, n.type);
    p.nodes.push_back(std::move(ln));
  };

  for (const Node& n : core.nodes()) {
    switch (n.kind) {
      case NodeKind::Placeholder:
      case NodeKind::Parameter:
        add_buffer(n.name, n.type, n.kind == NodeKind::Placeholder ? BufferRole::Input : BufferRole::Weight);
        access[n.name] = buffer_access(n.name, n.type);
        p.inputs.push_back(n.name);
        continue;
      case NodeKind::Output: continue;  // handled after the loop
      case NodeKind::Call: break;
    }
    const OpInfo* info = find_op(n.op);
    if (!info) throw InputError(strcat("node %", n.name, ": unknown op '", n.op, "'"));
    std::vector<const ValueAccess*> in;
    for (NodeId i : n.inputs) in.push_back(&access.at(core.node(i).name));

    if (info->category == OpCategory::Constant) {
      ValueAccess c;
      c.constant = true;
      c.value = n.attr_float("value", 0);
      c.dtype = n.type.dtype;
      c.shape = n.type.shape;
      access[n.name] = c;
      p.constants[n.name] = c.value;
      continue;
    }
    const bool is_view = info->category == OpCategory::Movement &&
                         (n.op == "reshape" || n.op == "permute" || n.op == "expand" || n.op == "slice");
    if (is_view) {
      if (in[0]->constant) {
        ValueAccess c = *in[0];
        c.shape = n.type.shape;
        access[n.name] = c;
      } else {
        access[n.name] = view_access(n, *in[0]);
      }
      continue;
    }
    LoopNode ln;
    ln.name = n.name;
    ln.output = n.name;
    ln.origin = n.name;
    ln.dtype = n.type.dtype;
    // A graph break: the host computes the node from whole HBM buffers. An operand that is a
    // view or a constant is first copied into a contiguous buffer of its own (on the LPU).
    auto make_host = [&]() {
      ln.kind = LoopKind::Host;
      ln.ranges = n.type.shape;
      ln.host_op = n.op;
      ln.host_attrs = n.attrs;
      auto vars = loop_var_names(LoopVar::Kind::Output, ln.ranges.size());
      ln.store_index = contiguous_index(n.type.shape, vars).simplify(ranges_of(ln));
      for (size_t j = 0; j < in.size(); ++j) {
        const ValueAccess& a = *in[j];
        const TensorType t{a.dtype, a.shape};
        LoopNode c;
        c.ranges = a.shape;
        auto cv = loop_var_names(LoopVar::Kind::Output, c.ranges.size());
        auto rng = ranges_of(c);
        Idx idx;
        for (const auto& v : cv) idx.push_back(Index::var(v));
        Index contiguous = contiguous_index(a.shape, cv).simplify(rng);
        bool plain = !a.constant && p.buffers.count(a.buffer) && p.buffers.at(a.buffer).type.shape == a.shape &&
                     a.index(idx).simplify(rng) == contiguous;
        if (plain) {
          ln.host_inputs.push_back(a.buffer);
          continue;
        }
        c.name = strcat(n.name, "_arg", j);
        c.output = c.name;
        c.origin = n.name;
        c.dtype = a.dtype;
        c.kind = LoopKind::Pointwise;
        c.body = load(a, idx, rng);
        c.store_index = contiguous;
        add_buffer(c.name, t, BufferRole::Intermediate);
        ln.host_inputs.push_back(c.name);
        p.nodes.push_back(std::move(c));
      }
      finish(std::move(ln), n);
    };
    auto no_lowering = [&](const std::string& why) {
      if (!opts.unsupported_to_host) throw InputError(why);
      make_host();
    };
    // A collective (graph/collective.h) is a node of its own like a graph break: whole buffers
    // in and out, never fused; the code generator sends it over the ESL (codegen/collective.h).
    if (opts.host_nodes.count(n.name) || info->host() || info->category == OpCategory::Collective) {
      make_host();
    } else if (info->category == OpCategory::Pointwise) {
      ln.kind = LoopKind::Pointwise;
      ln.ranges = n.type.shape;
      auto vars = loop_var_names(LoopVar::Kind::Output, ln.ranges.size());
      auto rng = ranges_of(ln);
      std::vector<Expr> args;
      for (const ValueAccess* a : in) args.push_back(load(*a, broadcast_idx(a->shape, ln.ranges, vars), rng));
      if (n.op == "to_dtype") {
        ln.body = make_cast(args[0], n.type.dtype);
      } else {
        ScalarOp op;
        if (!parse_scalar_op(n.op, op)) {
          ln.ranges.clear();
          no_lowering(strcat("node %", n.name, ": pointwise op '", n.op, "' has no loop-IR lowering"));
          continue;
        }
        ln.body = make_call(op, args, n.type.dtype);
      }
      ln.store_index = contiguous_index(n.type.shape, vars).simplify(rng);
      finish(std::move(ln), n);
    } else if (info->category == OpCategory::Reduction) {
      const ValueAccess& x = *in[0];
      auto dims = normalize_dims(n.attr_ints("dims"), static_cast<int>(x.shape.size()), n);
      std::set<int64_t> red(dims.begin(), dims.end());
      Idx idx(x.shape.size());
      Shape kept;
      std::vector<std::string> kept_vars;
      size_t ni = 0, nr = 0;
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (red.count(static_cast<int64_t>(d))) {
          idx[d] = Index::var(LoopVar::reduction(nr++));
          ln.reduction_ranges.push_back(x.shape[d]);
        } else {
          std::string v = LoopVar::output(ni++).name();
          idx[d] = Index::var(v);
          ln.ranges.push_back(x.shape[d]);
          kept.push_back(x.shape[d]);
          kept_vars.push_back(v);
        }
      }
      ln.kind = LoopKind::Reduction;
      ln.reduction = n.op == "sum" ? ReductionType::sum : n.op == "mean" ? ReductionType::mean
                   : n.op == "amax" ? ReductionType::max : ReductionType::min;
      auto rng = ranges_of(ln);
      ln.body = load(x, idx, rng);
      // Store: contiguous over the non-reduced dims (keepdim's size-1 dims add nothing).
      ln.store_index = contiguous_index(kept, kept_vars).simplify(rng);
      finish(std::move(ln), n);
    } else if (info->category == OpCategory::Matmul) {
      // out[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n]; a rank-1 A is one row.
      const ValueAccess& A = *in[0];
      const ValueAccess& B = *in[1];
      ln.kind = LoopKind::Matmul;
      ln.ranges = n.type.shape;
      bool vec = A.shape.size() == 1;
      if (vec) ln.ranges.insert(ln.ranges.begin(), 1);  // [N] -> [1, N]: one row
      ln.reduction_ranges = {A.shape.back()};
      auto vars = loop_var_names(LoopVar::Kind::Output, ln.ranges.size());
      size_t r = ln.ranges.size();
      Shape batch(ln.ranges.begin(), ln.ranges.end() - 2);
      std::vector<std::string> bvars(vars.begin(), vars.end() - 2);
      Idx ai, bi;
      if (vec) {
        ai = {Index::var(LoopVar::reduction(0))};
      } else {
        Shape ab(A.shape.begin(), A.shape.end() - 2);
        ai = broadcast_idx(ab, batch, bvars);
        ai.push_back(A.shape[A.shape.size() - 2] == 1 ? Index::constant(0) : Index::var(vars[r - 2]));
        ai.push_back(Index::var(LoopVar::reduction(0)));
      }
      Shape bb(B.shape.begin(), B.shape.end() - 2);
      bi = broadcast_idx(bb, batch, bvars);
      bi.push_back(Index::var(LoopVar::reduction(0)));
      bi.push_back(Index::var(vars[r - 1]));
      auto rng = ranges_of(ln);
      ln.body = make_call(ScalarOp::mul, {load(A, ai, rng), load(B, bi, rng)}, n.type.dtype);
      ln.reduction = ReductionType::sum;
      ln.store_index = contiguous_index(ln.ranges, vars).simplify(rng);
      finish(std::move(ln), n);
    } else if (info->category == OpCategory::Movement && n.op == "embedding") {
      const ValueAccess& W = *in[0];
      const ValueAccess& I = *in[1];
      if (W.constant || I.constant)
        throw InputError(strcat("node %", n.name, ": embedding of a constant table or index is not supported"));
      // The table must be a plain row-major buffer: views of it would need a gather through them.
      if (!p.buffers.count(W.buffer) || W.index({Index::var("a"), Index::var("b")}).str() !=
                                            (Index::var("a") * W.shape[1] + Index::var("b")).str())
        throw InputError(strcat("node %", n.name, ": embedding table must be a contiguous [V, D] buffer"));
      ln.kind = LoopKind::Gather;
      ln.ranges = n.type.shape;
      auto vars = loop_var_names(LoopVar::Kind::Output, ln.ranges.size());
      auto rng = ranges_of(ln);
      Idx ii;
      for (size_t d = 0; d + 1 < vars.size(); ++d) ii.push_back(Index::var(vars[d]));
      ln.gather_table = W.buffer;
      ln.gather_index = load(I, ii, rng);
      ln.body = make_load(W.buffer, Index::var(vars.back()), W.dtype);  // column within the gathered row
      ln.store_index = contiguous_index(n.type.shape, vars).simplify(rng);
      finish(std::move(ln), n);
    } else if (info->category == OpCategory::Movement && n.op == "cat") {
      // Each input is copied into its slice of one buffer (Inductor's ConcatKernel): one
      // writer node per input; the buffer is complete when all have run.
      int64_t dim = normalize_dims({n.attr_int("dim", 0)}, n.type.rank(), n)[0];
      add_buffer(n.name, n.type, BufferRole::Intermediate);
      int64_t at = 0;
      for (size_t j = 0; j < in.size(); ++j) {
        LoopNode w;
        w.name = strcat(n.name, "_part", j);
        w.output = n.name;
        w.origin = n.name;
        w.dtype = n.type.dtype;
        w.kind = LoopKind::Pointwise;
        w.ranges = in[j]->shape;
        auto vars = loop_var_names(LoopVar::Kind::Output, w.ranges.size());
        auto rng = ranges_of(w);
        Idx idx;
        for (const auto& v : vars) idx.push_back(Index::var(v));
        w.body = load(*in[j], idx, rng);
        Idx oidx = idx;
        oidx[static_cast<size_t>(dim)] = oidx[static_cast<size_t>(dim)] + Index::constant(at);
        auto ost = contiguous_strides_of(n.type.shape);
        Index st;
        for (size_t d = 0; d < oidx.size(); ++d) st = st + oidx[d] * ost[d];
        w.store_index = st.simplify(rng);
        at += in[j]->shape[static_cast<size_t>(dim)];
        p.nodes.push_back(std::move(w));
      }
      access[n.name] = buffer_access(n.name, n.type);
    } else {
      no_lowering(strcat("node %", n.name, ": op '", n.op, "' (", op_category_name(info->category),
                         ") has no loop-IR lowering yet"));
    }
  }

  // Graph outputs: a view or an input used as an output is copied into a buffer of its own.
  for (NodeId o : outs) {
    const Node& on = core.node(o);
    const ValueAccess& a = access.at(on.name);
    if (a.constant) throw InputError(strcat("node %", on.name, ": a constant graph output is not supported"));
    bool own = p.buffers.count(on.name) && a.buffer == on.name && p.buffers.at(on.name).role == BufferRole::Intermediate;
    std::string out_name = on.name;
    if (!own) {
      LoopNode c;
      c.name = on.name + "_out";
      c.output = c.name;
      c.origin = on.name;
      c.dtype = on.type.dtype;
      c.kind = LoopKind::Pointwise;
      c.ranges = on.type.shape;
      auto vars = loop_var_names(LoopVar::Kind::Output, c.ranges.size());
      auto rng = ranges_of(c);
      Idx idx;
      for (const auto& v : vars) idx.push_back(Index::var(v));
      c.body = load(a, idx, rng);
      c.store_index = contiguous_index(on.type.shape, vars).simplify(rng);
      add_buffer(c.output, on.type, BufferRole::Output);
      p.nodes.push_back(std::move(c));
      out_name = on.name + "_out";
    }
    p.buffers.at(out_name).role = BufferRole::Output;
    p.outputs.push_back(out_name);
  }
  return p;
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
  } else if (n.kind == LoopKind::Host) {
    os << n.name << " = host " << ranges(n.ranges, LoopVar::Kind::Output) << " " << dtype_name(n.dtype) << from
       << (is_collective_op(n.host_op) ? "   ; collective over the ESL\n" : "   ; graph break\n");
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
    os << "  " << b.name << ": " << type_str(b.type) << " " << buffer_role_name(b.role) << "\n";
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
