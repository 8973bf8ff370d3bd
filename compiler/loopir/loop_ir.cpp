#include "loopir/loop_ir.h"

#include <functional>
#include <set>
#include <sstream>

#include "graph/ops.h"
#include "support/error.h"

namespace lpu {

const char* buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Weight: return "weight";
    case BufferRole::Intermediate: return "intermediate";
    case BufferRole::Output: return "output";
  }
  return "?";
}

const char* reduction_type_name(ReductionType t) {
  switch (t) {
#define LPU_NAME_RED(name) \
  case ReductionType::name: return #name;
    LPU_REDUCTION_TYPES(LPU_NAME_RED)
#undef LPU_NAME_RED
  }
  return "?";
}

bool parse_reduction_type(const std::string& name, ReductionType& out) {
#define LPU_PARSE_RED(n) \
  if (name == #n) {      \
    out = ReductionType::n; \
    return true;         \
  }
  LPU_REDUCTION_TYPES(LPU_PARSE_RED)
#undef LPU_PARSE_RED
  return false;
}

std::vector<std::string> LoopNode::row_vars() const {
  std::vector<std::string> v;
  size_t n = kind == LoopKind::Pointwise && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  for (size_t i = 0; i < n; ++i) v.push_back("i" + std::to_string(i));
  return v;
}

std::vector<int64_t> LoopNode::row_sizes() const {
  size_t n = kind == LoopKind::Pointwise && !ranges.empty() ? ranges.size() - 1 : ranges.size();
  return {ranges.begin(), ranges.begin() + static_cast<long>(n)};
}

std::vector<std::string> LoopNode::col_vars() const {
  if (kind == LoopKind::Reduction) {
    std::vector<std::string> v;
    for (size_t i = 0; i < reduction_ranges.size(); ++i) v.push_back("r" + std::to_string(i));
    return v;
  }
  if (ranges.empty()) return {};
  return {"i" + std::to_string(ranges.size() - 1)};
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
  walk(body);
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

AccessPattern analyze_access(const LoopNode& node, const Index& index) {
  AccessPattern p;
  if (!index.is_affine()) {
    p.why_not = "index " + index.str() + " uses floordiv/mod";
    return p;
  }
  auto rv = node.row_vars();
  auto cv = node.col_vars();
  std::set<std::string> known(rv.begin(), rv.end());
  known.insert(cv.begin(), cv.end());
  for (const auto& v : index.variables())
    if (!known.count(v)) {
      p.why_not = "index " + index.str() + " uses unknown variable " + v;
      return p;
    }
  if (!flattened_stride(index, rv, node.row_sizes(), p.row_stride)) {
    p.why_not = "index " + index.str() + " is not one stride over the flattened rows";
    return p;
  }
  if (!flattened_stride(index, cv, node.col_sizes(), p.col_stride)) {
    p.why_not = "index " + index.str() + " is not one stride over the flattened columns";
    return p;
  }
  p.base = index.constant_part();
  p.ok = true;
  return p;
}

const LoopNode* LoopProgram::producer(const std::string& buffer) const {
  for (const auto& n : nodes)
    if (n.name == buffer) return &n;
  return nullptr;
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

LoopProgram lower_to_loop_ir(const Graph& core) {
  LoopProgram p;
  p.name = core.name();
  auto outs = core.outputs();
  std::set<NodeId> out_set(outs.begin(), outs.end());

  auto add_buffer = [&](const Node& n, BufferRole role) {
    Buffer b;
    b.name = n.name;
    b.type = n.type;
    b.role = out_set.count(n.id) ? BufferRole::Output : role;
    b.strides = contiguous_strides_of(n.type.shape);
    p.buffers[n.name] = b;
  };

  // Loads an input node broadcast into an iteration of shape `out` over `vars`.
  auto load_broadcast = [&](const Node& in, const Shape& out, const std::vector<std::string>& vars) -> Expr {
    if (auto it = p.constants.find(in.name); it != p.constants.end()) return make_constant(it->second, in.type.dtype);
    const Shape& s = in.type.shape;
    auto st = contiguous_strides_of(s);
    size_t off = out.size() - s.size();
    Index idx;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1) idx = idx + Index::var(vars[off + d]) * st[d];
    return make_load(in.name, idx, in.type.dtype);
  };

  for (const Node& n : core.nodes()) {
    switch (n.kind) {
      case NodeKind::Placeholder:
        add_buffer(n, BufferRole::Input);
        p.inputs.push_back(n.name);
        continue;
      case NodeKind::Parameter:
        add_buffer(n, BufferRole::Weight);
        p.inputs.push_back(n.name);
        continue;
      case NodeKind::Output:
        for (NodeId o : n.inputs) {
          const Node& on = core.node(o);
          if (p.constants.count(on.name))
            throw InputError(strcat("node %", on.name, ": a constant graph output is not supported"));
          p.outputs.push_back(on.name);
        }
        continue;
      case NodeKind::Call: break;
    }
    const OpInfo* info = find_op(n.op);
    if (!info) throw InputError(strcat("node %", n.name, ": unknown op '", n.op, "'"));
    if (info->category == OpCategory::Constant) {
      if (out_set.count(n.id)) throw InputError(strcat("node %", n.name, ": a constant graph output is not supported"));
      p.constants[n.name] = n.attr_float("value", 0);
      continue;
    }
    LoopNode ln;
    ln.name = n.name;
    ln.origin = n.name;
    ln.dtype = n.type.dtype;
    if (info->category == OpCategory::Pointwise) {
      ln.kind = LoopKind::Pointwise;
      ln.ranges = n.type.shape;
      std::vector<std::string> vars;
      for (size_t d = 0; d < ln.ranges.size(); ++d) vars.push_back("i" + std::to_string(d));
      std::vector<Expr> args;
      for (NodeId in : n.inputs) args.push_back(load_broadcast(core.node(in), ln.ranges, vars));
      if (n.op == "to_dtype") {
        ln.body = make_cast(args[0], n.type.dtype);
      } else {
        ScalarOp op;
        if (!parse_scalar_op(n.op, op))
          throw InputError(strcat("node %", n.name, ": pointwise op '", n.op, "' has no loop-IR lowering"));
        ln.body = make_call(op, args, n.type.dtype);
      }
      ln.store_index = contiguous_index(n.type.shape, vars);
    } else if (info->category == OpCategory::Reduction) {
      const Node& x = core.node(n.inputs[0]);
      auto dims = normalize_dims(n.attr_ints("dims"), x.type.rank(), n);
      std::set<int64_t> red(dims.begin(), dims.end());
      std::vector<std::string> vars(x.type.shape.size());
      size_t ni = 0, nr = 0;
      for (size_t d = 0; d < x.type.shape.size(); ++d) {
        if (red.count(static_cast<int64_t>(d))) {
          vars[d] = "r" + std::to_string(nr++);
          ln.reduction_ranges.push_back(x.type.shape[d]);
        } else {
          vars[d] = "i" + std::to_string(ni++);
          ln.ranges.push_back(x.type.shape[d]);
        }
      }
      ln.kind = LoopKind::Reduction;
      ln.reduction = n.op == "sum" ? ReductionType::sum : n.op == "mean" ? ReductionType::mean
                   : n.op == "amax" ? ReductionType::max : ReductionType::min;
      ln.body = load_broadcast(x, x.type.shape, vars);
      // Store: contiguous over the non-reduced dims (keepdim's size-1 dims add nothing).
      Shape kept;
      std::vector<std::string> kept_vars;
      for (size_t d = 0; d < x.type.shape.size(); ++d)
        if (!red.count(static_cast<int64_t>(d))) {
          kept.push_back(x.type.shape[d]);
          kept_vars.push_back(vars[d]);
        }
      ln.store_index = contiguous_index(kept, kept_vars);
    } else {
      throw InputError(strcat("node %", n.name, ": op '", n.op, "' (", op_category_name(info->category),
                              ") has no loop-IR lowering yet"));
    }
    add_buffer(n, BufferRole::Intermediate);
    p.nodes.push_back(std::move(ln));
  }
  return p;
}

std::string print_loop_node(const LoopNode& n) {
  std::ostringstream os;
  auto ranges = [](const std::vector<int64_t>& r, const char* prefix) {
    std::string s = "[";
    for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::string(prefix) + std::to_string(i) + " < " + std::to_string(r[i]);
    return s + "]";
  };
  if (n.kind == LoopKind::Pointwise) {
    os << n.name << " = pointwise " << ranges(n.ranges, "i") << " " << dtype_name(n.dtype) << "\n";
    os << "  " << n.name << "[" << n.store_index.str() << "] = " << expr_str(n.body) << "\n";
  } else {
    os << n.name << " = reduction." << reduction_type_name(n.reduction) << " " << ranges(n.ranges, "i") << " over "
       << ranges(n.reduction_ranges, "r") << " " << dtype_name(n.dtype) << "\n";
    os << "  " << n.name << "[" << n.store_index.str() << "] = " << reduction_type_name(n.reduction) << "_r "
       << expr_str(n.body) << "\n";
  }
  return os.str();
}

std::string print_loop_ir(const LoopProgram& p) {
  std::ostringstream os;
  os << "loop_ir " << p.name << "\n";
  os << "buffers:\n";
  for (const auto& name : p.inputs) {
    const Buffer& b = p.buffers.at(name);
    os << "  " << b.name << ": " << type_str(b.type) << " " << buffer_role_name(b.role) << "\n";
  }
  for (const auto& n : p.nodes) {
    const Buffer& b = p.buffers.at(n.name);
    os << "  " << b.name << ": " << type_str(b.type) << " " << buffer_role_name(b.role) << "\n";
  }
  if (!p.constants.empty()) {
    os << "constants:\n";
    for (const auto& [k, v] : p.constants) os << "  " << k << " = " << format_double(v) << "\n";
  }
  os << "nodes:\n";
  for (const auto& n : p.nodes) os << print_loop_node(n);
  return os.str();
}

}  // namespace lpu
