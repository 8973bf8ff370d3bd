// Lowering a core-op graph to loop IR (loopir/loop_ir.h). The op registry decides how each
// node lowers: its category (and, for movement ops, their MovementKind) picks one lowering
// function below; no op is recognised by name here except through the tables that define it
// (the scalar op table for pointwise bodies, graph_reduction_type for reductions).
#include <algorithm>
#include <functional>
#include <set>

#include "graph/ops.h"
#include "loopir/loop_ir.h"
#include "support/error.h"
#include "support/layer_tag.h"

namespace lpu {

namespace {

std::vector<int64_t> contiguous_strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

Index contiguous_index(const Shape& shape, const std::vector<LoopVar>& vars) {
  auto st = contiguous_strides_of(shape);
  Index idx;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) idx = idx + Index::var(vars[d]) * st[d];
  return idx;
}

using Idx = std::vector<Index>;

// One plain index per variable: i0, i1, ... as written.
Idx identity_idx(const std::vector<LoopVar>& vars) {
  Idx idx;
  for (const auto& v : vars) idx.push_back(Index::var(v));
  return idx;
}

// Per-dim indices that broadcast a value of shape `s` into an iteration over `vars` (shape `out`).
Idx broadcast_idx(const Shape& s, const Shape& out, const std::vector<LoopVar>& vars) {
  Idx idx(s.size());
  size_t off = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) idx[d] = s[d] == 1 ? Index::constant(0) : Index::var(vars[off + d]);
  return idx;
}

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

// The index function of each view op: the input element that result element `idx` is.
using ViewIndex = std::function<Index(const Idx&)>;

ViewIndex reshape_index(const Node& n, const Shape& xs, ViewIndex inner) {
  auto ost = contiguous_strides_of(n.type.shape);
  auto xst = contiguous_strides_of(xs);
  return [=](const Idx& idx) {
    Index flat;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat + idx[d] * ost[d];
    Idx xi(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) {
      Index q = flat.floordiv(xst[d]);
      xi[d] = d == 0 ? q : q.mod(xs[d]);
    }
    return inner(xi);
  };
}

ViewIndex permute_index(const Node& n, const Shape& xs, ViewIndex inner) {
  auto dims = n.attr_ints("dims");
  int64_t r = static_cast<int64_t>(xs.size());
  return [=](const Idx& idx) {
    Idx xi(xs.size());
    for (size_t k = 0; k < dims.size(); ++k) xi[static_cast<size_t>(dims[k] < 0 ? dims[k] + r : dims[k])] = idx[k];
    return inner(xi);
  };
}

ViewIndex expand_index(const Node& n, const Shape& xs, ViewIndex inner) {
  size_t off = n.type.shape.size() - xs.size();
  return [=](const Idx& idx) {
    Idx xi(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) xi[d] = xs[d] == 1 ? Index::constant(0) : idx[off + d];
    return inner(xi);
  };
}

ViewIndex slice_index(const Node& n, const Shape& xs, ViewIndex inner) {
  int64_t dim = normalize_dims({n.attr_int("dim")}, static_cast<int>(xs.size()), n)[0];
  int64_t size = xs[static_cast<size_t>(dim)];
  int64_t start = n.attr_int("start", 0), step = n.attr_int("step", 1);
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  return [=](const Idx& idx) {
    Idx xi = idx;
    xi[static_cast<size_t>(dim)] = idx[static_cast<size_t>(dim)] * step + Index::constant(start);
    return inner(xi);
  };
}

ValueAccess view_access(const Node& n, const ValueAccess& x) {
  using Make = ViewIndex (*)(const Node&, const Shape&, ViewIndex);
  static const std::map<std::string, Make> views = {
      {"reshape", reshape_index}, {"permute", permute_index}, {"expand", expand_index}, {"slice", slice_index}};
  auto it = views.find(n.op);
  if (it == views.end()) throw InternalError("no view lowering for " + n.op);
  ValueAccess v = x;
  v.shape = n.type.shape;
  v.index = it->second(n, x.shape, x.index);
  return v;
}

// The lowering of one graph: walks its nodes in order, keeping how each value is read.
class Lowering {
 public:
  Lowering(const Graph& core, const LoweringOptions& opts) : core_(core), opts_(opts) { p_.name = core.name(); }

  LoopProgram run() {
    std::set<std::string> outputs;
    for (NodeId o : core_.outputs()) outputs.insert(core_.node(o).name);
    for (const Node& n : core_.nodes()) {
      switch (n.kind) {
        case NodeKind::Placeholder:
        case NodeKind::Parameter:
          add_buffer(n.name, n.type, n.kind == NodeKind::Placeholder ? BufferRole::Input : BufferRole::Weight);
          p_.buffers[n.name].quant = parameter_quant(n);
          access_[n.name] = buffer_access(n.name, n.type);
          p_.inputs.push_back(n.name);
          break;
        case NodeKind::Output: continue;  // handled after the loop
        case NodeKind::Call: lower_call(n); break;
      }
      // A decoder layer's output (a tagged name: support/layer_tag.h) has its copy right after
      // its value, not at the end: what the copy reads is then dead within its layer, and the
      // code generator gives that layer's intermediates the HBM of the layer before
      // (codegen/hbm_assign.h). Other outputs keep their copies at the end, where they overlap
      // the last kernels (an untagged graph shares no HBM across layers anyway).
      if (outputs.count(n.name) && layer_of_name(n.name) >= 0) output_buffer(n);
    }
    std::set<std::string> seen;
    for (NodeId o : core_.outputs()) {
      const Node& on = core_.node(o);
      const bool again = !seen.insert(on.name).second;  // listed again: a copy of its own
      if (again || !output_buffer_.count(on.name)) output_buffer(on);
      p_.outputs.push_back(output_buffer_.at(on.name));
    }
    return std::move(p_);
  }

 private:
  using Inputs = std::vector<const ValueAccess*>;
  const Graph& core_;
  const LoweringOptions& opts_;
  LoopProgram p_;
  std::map<std::string, ValueAccess> access_;
  std::map<std::string, std::string> output_buffer_;  // graph output -> the buffer that holds it

  void add_buffer(const std::string& name, const TensorType& t, BufferRole role) {
    Buffer b;
    b.name = name;
    b.type = t;
    b.role = role;
    b.strides = contiguous_strides_of(t.shape);
    p_.buffers[name] = b;
  }

  // A load of value `a` at per-dim indices `idx`, simplified with the node's variable ranges.
  static Expr load(const ValueAccess& a, const Idx& idx, const std::map<LoopVar, int64_t>& ranges) {
    if (a.constant) return make_constant(a.value, a.dtype);
    return make_load(a.buffer, a.index(idx).simplify(ranges), a.dtype);
  }

  // A loop node computing graph node `n` into a buffer of its own name.
  static LoopNode node_for(const Node& n) {
    LoopNode ln;
    ln.name = n.name;
    ln.output = n.name;
    ln.origin = n.name;
    ln.dtype = n.type.dtype;
    return ln;
  }

  void finish(LoopNode ln, const Node& n) {
    add_buffer(ln.output, n.type, BufferRole::Intermediate);
    access_[n.name] = buffer_access(ln.output, n.type);
    p_.nodes.push_back(std::move(ln));
  }

  // The category picks the lowering: a collective (graph/collective.h: whole buffers in and out,
  // never fused; the code generator sends it over the ESL, codegen/collective.h) becomes a
  // collective node; a node the options send to the host and a host op, a host node.
  void lower_call(const Node& n) {
    const OpInfo* info = find_op(n.op);
    if (!info) throw InputError(strcat("node %", n.name, ": unknown op '", n.op, "'"));
    Inputs in;
    for (NodeId i : n.inputs) in.push_back(&access_.at(core_.node(i).name));
    if (info->category == OpCategory::Constant) return lower_constant(n);
    if (info->view()) return lower_view(n, *in[0]);
    if (info->category == OpCategory::Collective) return lower_host(n, in, LoopKind::Collective);
    if (opts_.host_nodes.count(n.name) || info->host()) return lower_host(n, in);
    bool lowered = false;
    switch (info->category) {
      case OpCategory::Pointwise: lowered = lower_pointwise(n, in); break;
      case OpCategory::Reduction: lowered = lower_reduction(n, *in[0]); break;
      case OpCategory::Matmul: lowered = lower_matmul(n, *in[0], *in[1]); break;
      case OpCategory::Movement:
        if (info->movement == MovementKind::Gather) lowered = lower_gather(n, *in[0], *in[1]);
        if (info->movement == MovementKind::Concat) lowered = lower_concat(n, in);
        break;
      default: break;
    }
    if (lowered) return;
    std::string why = info->category == OpCategory::Pointwise
                          ? strcat("node %", n.name, ": pointwise op '", n.op, "' has no loop-IR lowering")
                          : strcat("node %", n.name, ": op '", n.op, "' (", op_category_name(info->category),
                                   ") has no loop-IR lowering yet");
    if (!opts_.unsupported_to_host) throw InputError(why);
    lower_host(n, in);
  }

  void lower_constant(const Node& n) {
    ValueAccess c;
    c.constant = true;
    c.value = n.attr_float("value", 0);
    c.dtype = n.type.dtype;
    c.shape = n.type.shape;
    access_[n.name] = c;
    p_.constants[n.name] = c.value;
  }

  // A view moves no data: it composes its index function onto the input's.
  void lower_view(const Node& n, const ValueAccess& x) {
    if (x.constant) {
      ValueAccess c = x;
      c.shape = n.type.shape;
      access_[n.name] = c;
    } else {
      access_[n.name] = view_access(n, x);
    }
  }

  // A graph break (the host computes the node from whole HBM buffers) or a collective (the ESL
  // moves them). An operand that is a view or a constant is first copied into a contiguous
  // buffer of its own (on the LPU).
  void lower_host(const Node& n, const Inputs& in, LoopKind kind = LoopKind::Host) {
    LoopNode ln = node_for(n);
    ln.kind = kind;
    ln.ranges = n.type.shape;
    ln.host_op = n.op;
    ln.host_attrs = n.attrs;
    auto vars = loop_vars(LoopVar::Kind::Output, ln.ranges.size());
    ln.store_index = contiguous_index(n.type.shape, vars).simplify(ln.var_ranges());
    for (size_t j = 0; j < in.size(); ++j) ln.host_inputs.push_back(host_operand(n, j, *in[j]));
    finish(std::move(ln), n);
  }

  // The buffer holding operand j of host node `n` whole and contiguous: its own, or a copy.
  std::string host_operand(const Node& n, size_t j, const ValueAccess& a) {
    LoopNode c;
    c.ranges = a.shape;
    auto cv = loop_vars(LoopVar::Kind::Output, c.ranges.size());
    auto rng = c.var_ranges();
    Idx idx = identity_idx(cv);
    Index contiguous = contiguous_index(a.shape, cv).simplify(rng);
    bool plain = !a.constant && p_.buffers.count(a.buffer) && p_.buffers.at(a.buffer).type.shape == a.shape &&
                 a.index(idx).simplify(rng) == contiguous;
    if (plain) return a.buffer;
    c.name = strcat(n.name, "_arg", j);
    c.output = c.name;
    c.origin = n.name;
    c.dtype = a.dtype;
    c.kind = LoopKind::Pointwise;
    c.body = load(a, idx, rng);
    c.store_index = contiguous;
    add_buffer(c.name, TensorType{a.dtype, a.shape}, BufferRole::Intermediate);
    std::string name = c.name;
    p_.nodes.push_back(std::move(c));
    return name;
  }

  // out[i] = op(inputs broadcast to i), op from the scalar op table (or a dtype conversion).
  bool lower_pointwise(const Node& n, const Inputs& in) {
    LoopNode ln = node_for(n);
    ln.kind = LoopKind::Pointwise;
    ln.ranges = n.type.shape;
    auto vars = loop_vars(LoopVar::Kind::Output, ln.ranges.size());
    auto rng = ln.var_ranges();
    std::vector<Expr> args;
    for (const ValueAccess* a : in) args.push_back(load(*a, broadcast_idx(a->shape, ln.ranges, vars), rng));
    if (n.op == "to_dtype") {
      ln.body = make_cast(args[0], n.type.dtype);
    } else {
      ScalarOp op;
      if (!parse_scalar_op(n.op, op)) return false;
      ln.body = make_call(op, args, n.type.dtype);
    }
    ln.store_index = contiguous_index(n.type.shape, vars).simplify(rng);
    finish(std::move(ln), n);
    return true;
  }

  // The reduced dims become r0, r1, ...; the kept ones i0, i1, ... (graph_reduction_type says
  // which reduction the op is).
  bool lower_reduction(const Node& n, const ValueAccess& x) {
    LoopNode ln = node_for(n);
    ln.kind = LoopKind::Reduction;
    if (!graph_reduction_type(n.op, ln.reduction))
      throw InternalError(strcat("node %", n.name, ": '", n.op, "' is no graph reduction"));
    auto dims = normalize_dims(n.attr_ints("dims"), static_cast<int>(x.shape.size()), n);
    std::set<int64_t> red(dims.begin(), dims.end());
    Idx idx(x.shape.size());
    Shape kept;
    std::vector<LoopVar> kept_vars;
    size_t ni = 0, nr = 0;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (red.count(static_cast<int64_t>(d))) {
        idx[d] = Index::var(LoopVar::reduction(nr++));
        ln.reduction_ranges.push_back(x.shape[d]);
      } else {
        LoopVar v = LoopVar::output(ni++);
        idx[d] = Index::var(v);
        ln.ranges.push_back(x.shape[d]);
        kept.push_back(x.shape[d]);
        kept_vars.push_back(v);
      }
    }
    auto rng = ln.var_ranges();
    ln.body = load(x, idx, rng);
    // Store: contiguous over the non-reduced dims (keepdim's size-1 dims add nothing).
    ln.store_index = contiguous_index(kept, kept_vars).simplify(rng);
    finish(std::move(ln), n);
    return true;
  }

  // out[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n]; a rank-1 A is one row.
  bool lower_matmul(const Node& n, const ValueAccess& A, const ValueAccess& B) {
    LoopNode ln = node_for(n);
    ln.kind = LoopKind::Matmul;
    ln.ranges = n.type.shape;
    bool vec = A.shape.size() == 1;
    if (vec) ln.ranges.insert(ln.ranges.begin(), 1);  // [N] -> [1, N]: one row
    ln.reduction_ranges = {A.shape.back()};
    auto vars = loop_vars(LoopVar::Kind::Output, ln.ranges.size());
    size_t r = ln.ranges.size();
    Shape batch(ln.ranges.begin(), ln.ranges.end() - 2);
    std::vector<LoopVar> bvars(vars.begin(), vars.end() - 2);
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
    auto rng = ln.var_ranges();
    ln.body = make_call(ScalarOp::mul, {load(A, ai, rng), load(B, bi, rng)}, n.type.dtype);
    ln.reduction = ReductionType::sum;
    ln.store_index = contiguous_index(ln.ranges, vars).simplify(rng);
    finish(std::move(ln), n);
    return true;
  }

  // out[row, c] = table[index(row), c]: a gather of whole rows of a plain [V, D] table.
  bool lower_gather(const Node& n, const ValueAccess& W, const ValueAccess& I) {
    if (W.constant || I.constant)
      throw InputError(strcat("node %", n.name, ": embedding of a constant table or index is not supported"));
    // The table must be a plain row-major buffer: views of it would need a gather through them.
    // (a reshape of a contiguous buffer to [V, D], as MoE expert slabs are, counts: simplified
    // over the table's ranges its index is the plain one). The table's row and column are
    // scratch variables: any two distinct ones do.
    const Index row = Index::var(LoopVar::output(0)), col = Index::var(LoopVar::output(1));
    const std::map<LoopVar, int64_t> tr{{LoopVar::output(0), W.shape[0]}, {LoopVar::output(1), W.shape[1]}};
    if (!p_.buffers.count(W.buffer) || W.index({row, col}).simplify(tr) != (row * W.shape[1] + col).simplify(tr))
      throw InputError(strcat("node %", n.name, ": embedding table must be a contiguous [V, D] buffer"));
    LoopNode ln = node_for(n);
    ln.kind = LoopKind::Gather;
    ln.ranges = n.type.shape;
    auto vars = loop_vars(LoopVar::Kind::Output, ln.ranges.size());
    auto rng = ln.var_ranges();
    Idx ii;
    for (size_t d = 0; d + 1 < vars.size(); ++d) ii.push_back(Index::var(vars[d]));
    ln.gather_table = W.buffer;
    ln.gather_index = load(I, ii, rng);
    ln.body = make_load(W.buffer, Index::var(vars.back()), W.dtype);  // column within the gathered row
    ln.store_index = contiguous_index(n.type.shape, vars).simplify(rng);
    finish(std::move(ln), n);
    return true;
  }

  // Each input is copied into its slice of one buffer (Inductor's ConcatKernel): one writer
  // node per input; the buffer is complete when all have run.
  bool lower_concat(const Node& n, const Inputs& in) {
    int64_t dim = normalize_dims({n.attr_int("dim", 0)}, n.type.rank(), n)[0];
    add_buffer(n.name, n.type, BufferRole::Intermediate);
    auto ost = contiguous_strides_of(n.type.shape);
    int64_t at = 0;
    for (size_t j = 0; j < in.size(); ++j) {
      LoopNode w = node_for(n);
      w.name = strcat(n.name, "_part", j);
      w.kind = LoopKind::Pointwise;
      w.ranges = in[j]->shape;
      auto vars = loop_vars(LoopVar::Kind::Output, w.ranges.size());
      auto rng = w.var_ranges();
      Idx idx = identity_idx(vars);
      w.body = load(*in[j], idx, rng);
      Idx oidx = idx;
      oidx[static_cast<size_t>(dim)] = oidx[static_cast<size_t>(dim)] + Index::constant(at);
      Index st;
      for (size_t d = 0; d < oidx.size(); ++d) st = st + oidx[d] * ost[d];
      w.store_index = st.simplify(rng);
      at += in[j]->shape[static_cast<size_t>(dim)];
      p_.nodes.push_back(std::move(w));
    }
    access_[n.name] = buffer_access(n.name, n.type);
    return true;
  }

  // Whether view `a` of output `on` is all of an intermediate's elements in their own order (a
  // reshape, as a decoder's new keys split into heads): that buffer can hold the output.
  bool whole_buffer_in_order(const Node& on, const ValueAccess& a) const {
    auto b = p_.buffers.find(a.buffer);
    if (b == p_.buffers.end() || b->second.role != BufferRole::Intermediate || b->second.type.dtype != on.type.dtype ||
        b->second.type.numel() != on.type.numel())
      return false;
    auto vars = loop_vars(LoopVar::Kind::Output, on.type.shape.size());
    LoopNode probe;
    probe.ranges = on.type.shape;
    auto rng = probe.var_ranges();
    return a.index(identity_idx(vars)).simplify(rng) == contiguous_index(on.type.shape, vars).simplify(rng);
  }

  // A graph output: held by its own buffer, or by the intermediate it is a reshape of (no copy,
  // and no intermediate kept to the program's end for one: codegen/hbm_assign.h); a strided
  // view or an input used as an output is copied into a buffer of its own.
  void output_buffer(const Node& on) {
    const ValueAccess& a = access_.at(on.name);
    if (a.constant) throw InputError(strcat("node %", on.name, ": a constant graph output is not supported"));
    bool own =
        p_.buffers.count(on.name) && a.buffer == on.name && p_.buffers.at(on.name).role == BufferRole::Intermediate;
    std::string out_name = on.name;
    if (!own && whole_buffer_in_order(on, a)) {
      out_name = a.buffer;  // it takes the output's shape: the same elements in the same order
      Buffer& b = p_.buffers.at(out_name);
      b.type.shape = on.type.shape;
      b.strides = contiguous_strides_of(on.type.shape);
    } else if (!own) {
      LoopNode c;
      c.name = on.name + "_out";
      c.output = c.name;
      c.origin = on.name;
      c.dtype = on.type.dtype;
      c.kind = LoopKind::Pointwise;
      c.ranges = on.type.shape;
      auto vars = loop_vars(LoopVar::Kind::Output, c.ranges.size());
      auto rng = c.var_ranges();
      c.body = load(a, identity_idx(vars), rng);
      c.store_index = contiguous_index(on.type.shape, vars).simplify(rng);
      add_buffer(c.output, on.type, BufferRole::Output);
      p_.nodes.push_back(std::move(c));
      out_name = on.name + "_out";
    }
    p_.buffers.at(out_name).role = BufferRole::Output;
    output_buffer_[on.name] = out_name;
  }
};

}  // namespace

LoopProgram lower_to_loop_ir(const Graph& core, const LoweringOptions& opts) { return Lowering(core, opts).run(); }

}  // namespace lpu
