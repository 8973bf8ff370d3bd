#include "graph/ops.h"

#include <algorithm>
#include <map>

#include "graph/aten.h"
#include "graph/collective.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"
#include "ref/host_ops.h"
#include "support/error.h"

namespace lpu {

const char* op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Constant: return "constant";
    case OpCategory::Composite: return "composite";
    case OpCategory::Matmul: return "matmul";
    case OpCategory::Movement: return "movement";
    case OpCategory::Host: return "host";
    case OpCategory::Collective: return "collective";
  }
  return "?";
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw InputError(strcat("node %", node.name, " (", node.op, "): shapes ", shape_str(a), " and ",
                              shape_str(b), " do not broadcast"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int rank, const Node& node) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    int64_t nd = d < 0 ? d + rank : d;
    if (nd < 0 || nd >= rank)
      throw InputError(strcat("node %", node.name, " (", node.op, "): dim ", d, " out of range for rank ", rank));
    out.push_back(nd);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t normalize_dim(int64_t dim, int rank, const Node& node) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    throw InputError(strcat("node %", node.name, " (", node.op, "): dim ", dim, " out of range for rank ", rank));
  return d;
}

SliceRange slice_range(const Node& n, int64_t size) {
  SliceRange r;
  r.step = n.attr_int("step", 1);
  if (r.step < 1) throw InputError(strcat("node %", n.name, " (", n.op, "): step ", r.step, " must be >= 1"));
  auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  r.start = clamp(n.attr_int("start", 0));
  r.end = clamp(n.attr_int("end", size));
  return r;
}

void check_arity(const OpInfo& info, const Node& n) {
  int k = static_cast<int>(n.inputs.size());
  if (k < info.min_inputs || k > info.max_inputs)
    throw InputError(strcat("node %", n.name, " (", n.op, "): expects ", info.min_inputs,
                            info.min_inputs == info.max_inputs ? "" : strcat("..", info.max_inputs),
                            " inputs, got ", k));
}

namespace {

const TensorType& in_type(const Graph& g, const Node& n, size_t i) { return g.node(n.inputs.at(i)).type; }

void check_floating(const Graph& g, const Node& n) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!is_floating(in_type(g, n, i).dtype))
      throw InputError(strcat("node %", n.name, " (", n.op, "): input ", i, " has dtype ",
                              dtype_name(in_type(g, n, i).dtype), ", expected a floating type"));
}

TensorType unary(const Graph& g, const Node& n) {
  check_floating(g, n);
  return in_type(g, n, 0);
}

TensorType binary(const Graph& g, const Node& n) {
  const auto& a = in_type(g, n, 0);
  const auto& b = in_type(g, n, 1);
  if (a.dtype != b.dtype)
    throw InputError(strcat("node %", n.name, " (", n.op, "): dtype mismatch ", dtype_name(a.dtype), " vs ",
                            dtype_name(b.dtype)));
  return {a.dtype, broadcast_shapes(a.shape, b.shape, n)};
}

TensorType compare(const Graph& g, const Node& n) {
  TensorType t = binary(g, n);
  t.dtype = DType::boolean;
  return t;
}

TensorType test(const Graph& g, const Node& n) {
  TensorType t = unary(g, n);
  t.dtype = DType::boolean;
  return t;
}

TensorType bits(const Graph& g, const Node& n) {
  TensorType t = binary(g, n);
  if (is_floating(t.dtype))
    throw InputError(strcat("node %", n.name, " (", n.op, "): expects bool or integer inputs, got ", dtype_name(t.dtype)));
  return t;
}

TensorType where(const Graph& g, const Node& n) {
  const auto& c = in_type(g, n, 0);
  if (c.dtype != DType::boolean)
    throw InputError(strcat("node %", n.name, " (where): condition must be bool, got ", dtype_name(c.dtype)));
  const auto& a = in_type(g, n, 1);
  const auto& b = in_type(g, n, 2);
  if (a.dtype != b.dtype)
    throw InputError(strcat("node %", n.name, " (where): dtype mismatch ", dtype_name(a.dtype), " vs ",
                            dtype_name(b.dtype)));
  return {a.dtype, broadcast_shapes(c.shape, broadcast_shapes(a.shape, b.shape, n), n)};
}

TensorType full(const Graph&, const Node& n) {
  TensorType t;
  t.dtype = DType::f32;
  std::string ds = n.attr_str("dtype", "f32");
  if (!parse_dtype(ds, t.dtype)) throw InputError(strcat("node %", n.name, " (full): unknown dtype '", ds, "'"));
  t.shape = n.has_attr("shape") ? n.attr_ints("shape") : Shape{};
  for (auto d : t.shape)
    if (d <= 0) throw InputError(strcat("node %", n.name, " (full): non-positive dimension in shape"));
  (void)n.attr_float("value", 0.0);
  return t;
}

TensorType to_dtype(const Graph& g, const Node& n) {
  TensorType t = in_type(g, n, 0);
  std::string ds = n.attr_str("dtype", "");
  if (!parse_dtype(ds, t.dtype)) throw InputError(strcat("node %", n.name, " (to_dtype): unknown dtype '", ds, "'"));
  return t;
}

TensorType reduction(const Graph& g, const Node& n) {
  check_floating(g, n);
  const auto& x = in_type(g, n, 0);
  auto dims = normalize_dims(n.attr_ints("dims"), x.rank(), n);
  // argmax's result is a position along one dim (as a number of the input's dtype).
  if (n.op == "argmax" && dims.size() != 1)
    throw InputError(strcat("node %", n.name, " (argmax): dims must name exactly one dim, got ", dims.size()));
  bool keep = n.attr_bool("keepdim", false);
  TensorType t{x.dtype, {}};
  for (int i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced)
      t.shape.push_back(x.shape[static_cast<size_t>(i)]);
    else if (keep)
      t.shape.push_back(1);
  }
  return t;
}

// Normalises over the last dim; weight and bias (optional) have shape [last].
TensorType norm(const Graph& g, const Node& n) {
  check_floating(g, n);
  const auto& x = in_type(g, n, 0);
  if (x.rank() < 1) throw InputError(strcat("node %", n.name, " (", n.op, "): input must have rank >= 1"));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const auto& w = in_type(g, n, i);
    if (w.shape != Shape{x.shape.back()})
      throw InputError(strcat("node %", n.name, " (", n.op, "): input ", i, " has shape ", shape_str(w.shape),
                              ", expected [", x.shape.back(), "]"));
  }
  return x;
}

TensorType gelu(const Graph& g, const Node& n) {
  std::string a = n.attr_str("approximate", "none");
  if (a != "none" && a != "tanh")
    throw InputError(strcat("node %", n.name, " (gelu): approximate must be \"none\" or \"tanh\", got \"", a, "\""));
  return unary(g, n);
}

TensorType softmax(const Graph& g, const Node& n) {
  TensorType t = unary(g, n);
  normalize_dims({n.attr_int("dim", -1)}, t.rank(), n);
  return t;
}

// torch.matmul for a rank >= 1 first and a rank >= 2 second operand:
//   [..., K] x [K, N] -> [..., N]                    (2-D weight, any activation rank)
//   [..., M, K] x [..., K, N] -> [bcast(...), M, N]  (batch dims broadcast numpy-style)
// A rank-1 first operand only with a 2-D second one ([K] x [K, N] -> [N]); a rank-1 second
// operand is not a core form (aten.matmul's decomposition reshapes it to [K, 1]).
TensorType matmul(const Graph& g, const Node& n) {
  const auto& a = in_type(g, n, 0);
  const auto& b = in_type(g, n, 1);
  if (a.rank() < 1 || b.rank() < 2 || (a.rank() == 1 && b.rank() != 2))
    throw InputError(strcat("node %", n.name, " (matmul): expected [..., K] x [K, N] or [..., M, K] x [..., K, N], got ",
                            shape_str(a.shape), " x ", shape_str(b.shape)));
  int64_t k_b = b.shape[static_cast<size_t>(b.rank() - 2)];
  if (a.shape.back() != k_b)
    throw InputError(strcat("node %", n.name, " (matmul): inner dimensions differ: ", shape_str(a.shape), " x ",
                            shape_str(b.shape)));
  if (a.dtype != b.dtype)
    throw InputError(strcat("node %", n.name, " (matmul): dtype mismatch ", dtype_name(a.dtype), " vs ",
                            dtype_name(b.dtype)));
  TensorType t{a.dtype, {}};
  if (a.rank() == 1) {
    t.shape = {b.shape.back()};
    return t;
  }
  Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  t.shape = broadcast_shapes(batch_a, batch_b, n);
  t.shape.push_back(a.shape[static_cast<size_t>(a.rank() - 2)]);
  t.shape.push_back(b.shape.back());
  return t;
}

void check_nonempty(const Node& n, const Shape& s) {
  for (auto d : s)
    if (d < 1)
      throw InputError(strcat("node %", n.name, " (", n.op, "): result shape ", shape_str(s),
                              " has an empty or negative dimension"));
}

// reshape {shape}: the same elements in row-major order; sizes explicit (no -1).
TensorType reshape(const Graph& g, const Node& n) {
  const auto& x = in_type(g, n, 0);
  Shape s = n.attr_ints("shape");
  check_nonempty(n, s);
  if (numel(s) != x.numel())
    throw InputError(strcat("node %", n.name, " (reshape): cannot reshape ", shape_str(x.shape), " (", x.numel(),
                            " elements) to ", shape_str(s), " (", numel(s), " elements)"));
  return {x.dtype, s};
}

// permute {dims}: out dim i is input dim dims[i]; dims is a permutation of 0..rank-1
// (negative entries count from the end, as in torch).
TensorType permute(const Graph& g, const Node& n) {
  const auto& x = in_type(g, n, 0);
  auto dims = n.attr_ints("dims");
  if (static_cast<int>(dims.size()) != x.rank())
    throw InputError(strcat("node %", n.name, " (permute): dims has ", dims.size(), " entries for rank ", x.rank()));
  if (normalize_dims(dims, x.rank(), n).size() != dims.size())
    throw InputError(strcat("node %", n.name, " (permute): dims ", format_attr(dims), " repeat a dimension"));
  TensorType t{x.dtype, {}};
  for (auto d : dims) t.shape.push_back(x.shape[static_cast<size_t>(normalize_dim(d, x.rank(), n))]);
  return t;
}

// expand {shape}: numpy broadcast; size-1 dims repeat, new leading dims may be added; -1
// keeps an existing dim (torch).
TensorType expand(const Graph& g, const Node& n) {
  const auto& x = in_type(g, n, 0);
  Shape s = n.attr_ints("shape");
  if (s.size() < x.shape.size())
    throw InputError(strcat("node %", n.name, " (expand): cannot expand ", shape_str(x.shape), " to fewer dims ",
                            shape_str(s)));
  size_t lead = s.size() - x.shape.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (i >= lead) {
      int64_t have = x.shape[i - lead];
      if (s[i] == -1) s[i] = have;
      if (have != 1 && have != s[i])
        throw InputError(strcat("node %", n.name, " (expand): cannot expand ", shape_str(x.shape), " to ",
                                format_attr(n.attr_ints("shape")), ": dim ", i, " has size ", have));
    }
  }
  check_nonempty(n, s);
  return {x.dtype, s};
}

// slice {dim, start, end, step}: torch semantics (see slice_range); the result must be non-empty.
TensorType slice(const Graph& g, const Node& n) {
  TensorType t = in_type(g, n, 0);
  if (t.rank() < 1) throw InputError(strcat("node %", n.name, " (slice): input must have rank >= 1"));
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim"), t.rank(), n));
  t.shape[d] = slice_range(n, t.shape[d]).length();
  check_nonempty(n, t.shape);
  return t;
}

// cat {dim}: inputs of equal dtype and rank, equal in every dim but `dim`.
TensorType cat(const Graph& g, const Node& n) {
  TensorType t = in_type(g, n, 0);
  if (t.rank() < 1) throw InputError(strcat("node %", n.name, " (cat): inputs must have rank >= 1"));
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim"), t.rank(), n));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const auto& u = in_type(g, n, i);
    if (u.dtype != t.dtype)
      throw InputError(strcat("node %", n.name, " (cat): input ", i, " has dtype ", dtype_name(u.dtype),
                              ", input 0 has ", dtype_name(t.dtype)));
    bool ok = u.rank() == t.rank();
    for (size_t k = 0; ok && k < u.shape.size(); ++k) ok = k == d || u.shape[k] == t.shape[k];
    if (!ok)
      throw InputError(strcat("node %", n.name, " (cat): input ", i, " has shape ", shape_str(u.shape),
                              ", incompatible with ", shape_str(in_type(g, n, 0).shape), " along dim ", d));
    t.shape[d] += u.shape[d];
  }
  return t;
}

// embedding(weight [V, D], indices int64 [...]) -> [..., D] rows of weight.
TensorType embedding(const Graph& g, const Node& n) {
  const auto& w = in_type(g, n, 0);
  const auto& idx = in_type(g, n, 1);
  if (w.rank() != 2)
    throw InputError(strcat("node %", n.name, " (embedding): weight must be [V, D], got ", shape_str(w.shape)));
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32)
    throw InputError(strcat("node %", n.name, " (embedding): indices must be i64 (or i32), got ", dtype_name(idx.dtype)));
  TensorType t{w.dtype, idx.shape};
  t.shape.push_back(w.shape[1]);
  return t;
}

std::vector<OpInfo> make_registry() {
  std::vector<OpInfo> ops;
  auto add = [&](std::string name, OpCategory c, int lo, int hi,
                 std::function<TensorType(const Graph&, const Node&)> f, std::string doc) {
    ops.push_back({std::move(name), c, lo, hi, std::move(f), std::move(doc)});
  };
  using C = OpCategory;
  // The core pointwise ops: one per line of the scalar op table (ops/scalar_ops.h).
  const std::map<std::string, std::function<TensorType(const Graph&, const Node&)>> typing = {
      {"unary", unary}, {"binary", binary}, {"compare", compare}, {"test", test}, {"bits", bits}, {"select", where}};
#define LPU_REGISTER_SCALAR_OP(name, arity, ...) \
  add(#name, C::Pointwise, arity, arity, typing.at(scalar_op_typing(ScalarOp::name)), scalar_op_doc(ScalarOp::name));
  LPU_SCALAR_OPS(LPU_REGISTER_SCALAR_OP)
#undef LPU_REGISTER_SCALAR_OP
  add("to_dtype", C::Pointwise, 1, 1, to_dtype, "type conversion {dtype}");
  add("full", C::Constant, 0, 0, full, "constant tensor {value, shape = [], dtype = \"f32\"}");
  for (ReductionType r : graph_reduction_types())
    add(torch_reduction_name(r), C::Reduction, 1, 1, reduction, "reduction over {dims}, {keepdim = false}");
  add("matmul", C::Matmul, 2, 2, matmul, "[..., K] x [K, N] -> [..., N]; [..., M, K] x [..., K, N] -> [bcast, M, N]");
  auto movement = [&](MovementKind kind) { ops.back().movement = kind; };
  add("reshape", C::Movement, 1, 1, reshape, "same elements, row-major, new {shape}");
  movement(MovementKind::View);
  add("permute", C::Movement, 1, 1, permute, "out dim i = input dim {dims}[i]");
  movement(MovementKind::View);
  add("expand", C::Movement, 1, 1, expand, "broadcast size-1 dims to {shape}, may add leading dims");
  movement(MovementKind::View);
  add("slice", C::Movement, 1, 1, slice, "{dim, start, end, step} torch semantics, end clamped, step >= 1");
  movement(MovementKind::View);
  add("cat", C::Movement, 1, 1 << 20, cat, "concatenate along {dim}");
  movement(MovementKind::Concat);
  add("embedding", C::Movement, 2, 2, embedding, "embedding(weight [V, D], indices int) -> indices.shape + [D]");
  movement(MovementKind::Gather);
  add("layer_norm", C::Composite, 1, 3, norm, "layer_norm(x, weight?, bias?) over the last dim {eps = 1e-5}");
  add("rms_norm", C::Composite, 1, 2, norm, "rms_norm(x, weight?) over the last dim {eps = 1e-6}");
  add("gelu", C::Composite, 1, 1, gelu, "gelu {approximate = \"none\" | \"tanh\"}");
  add("silu", C::Composite, 1, 1, unary, "x * sigmoid(x)");
  add("softmax", C::Composite, 1, 1, softmax, "softmax over {dim = -1}");
  for (auto& op : aten::registry()) ops.push_back(std::move(op));
  for (auto& op : host_ops::registry()) ops.push_back(std::move(op));
  for (auto& op : collective_op_registry()) ops.push_back(std::move(op));
  // Wrap every infer with the arity check so callers never index past the inputs.
  for (auto& op : ops) {
    auto inner = op.infer;
    OpInfo copy = op;
    op.infer = [inner, copy](const Graph& g, const Node& n) {
      check_arity(copy, n);
      return inner(g, n);
    };
  }
  return ops;
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = make_registry();
  return ops;
}

const OpInfo* find_op(const std::string& name) {
  static const std::map<std::string, const OpInfo*> index = [] {
    std::map<std::string, const OpInfo*> m;
    for (const auto& op : all_ops()) m[op.name] = &op;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

bool is_view_op(const Node& n) {
  if (n.kind != NodeKind::Call) return false;
  const OpInfo* info = find_op(n.op);
  return info && info->view();
}

}  // namespace lpu
