// The aten.* entries of the op registry: type inference for the ATen ops the PyTorch frontend
// exports. Each must agree with PyTorch (the exporter records PyTorch's own result types and
// verify() compares). Decompositions: passes/aten_decompositions.cpp.
#include <algorithm>
#include <cmath>

#include "graph/aten.h"
#include "graph/ops.h"
#include "support/error.h"

namespace lpu::aten {

namespace {

using Infer = TensorType (*)(const Graph&, const Node&);

[[noreturn]] void bad(const Node& n, const std::string& msg) {
  throw InputError(strcat("node %", n.name, " (", n.op, "): ", msg));
}

const TensorType& in(const Graph& g, const Node& n, size_t i) { return g.node(n.inputs.at(i)).type; }

void same_dtype(const Graph& g, const Node& n) {
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (in(g, n, i).dtype != in(g, n, 0).dtype)
      bad(n, strcat("dtype mismatch: ", dtype_name(in(g, n, 0).dtype), " vs ", dtype_name(in(g, n, i).dtype)));
}

// ---- pointwise ----------------------------------------------------------------------------

// exp, log, sqrt, ...: integer inputs compute in the default float type.
TensorType unary_float(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (!is_floating(t.dtype)) t.dtype = DType::f32;
  return t;
}

// neg, abs, relu: keep the dtype (not bool).
TensorType unary_same(const Graph& g, const Node& n) {
  const TensorType& t = in(g, n, 0);
  if (t.dtype == DType::boolean) bad(n, "bool input is not supported");
  return t;
}

TensorType unary_floating_only(const Graph& g, const Node& n) {
  const TensorType& t = in(g, n, 0);
  if (!is_floating(t.dtype)) bad(n, strcat("expects a floating input, got ", dtype_name(t.dtype)));
  if (n.op == "aten.gelu") {
    std::string a = n.attr_str("approximate", "none");
    if (a != "none" && a != "tanh") bad(n, strcat("approximate must be \"none\" or \"tanh\", got \"", a, "\""));
  }
  return t;
}

TensorType binary_arith(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "other"}));
  TensorType t{result_type(ops), broadcast_operands(ops, n)};
  if (t.dtype == DType::boolean) bad(n, "arithmetic on bool tensors is not supported");
  if (n.op == "aten.div") {
    std::string mode = n.attr_str("rounding_mode", "");
    if (!mode.empty() && mode != "floor" && mode != "trunc")
      bad(n, strcat("rounding_mode \"", mode, "\" is not one of \"floor\", \"trunc\""));
    if (mode.empty() && !is_floating(t.dtype)) t.dtype = DType::f32;  // true division
  }
  if ((n.op == "aten.atan2") && !is_floating(t.dtype)) t.dtype = DType::f32;
  if (n.has_attr("alpha") && !is_floating(t.dtype) && std::holds_alternative<double>(n.attrs.at("alpha")))
    bad(n, "a float alpha needs a floating result");
  return t;
}

TensorType pow(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "exponent"}));
  TensorType t{result_type(ops), broadcast_operands(ops, n)};
  if (t.dtype == DType::boolean) bad(n, "bool pow is not supported");
  return t;
}

TensorType compare(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "other"}));
  return {DType::boolean, broadcast_operands(ops, n)};
}

TensorType where(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"condition", "self", "other"}));
  if (!ops[0].tensor || ops[0].type.dtype != DType::boolean) bad(n, "condition must be a bool tensor");
  return {result_type({ops[1], ops[2]}), broadcast_operands(ops, n)};
}

TensorType masked_fill(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "mask", "value"}));
  if (!ops[0].tensor || !ops[1].tensor || ops[1].type.dtype != DType::boolean) bad(n, "expects (tensor, bool mask, value)");
  if (ops[2].tensor && ops[2].type.rank() != 0) bad(n, "a tensor value must be zero-dimensional");
  return {ops[0].type.dtype, broadcast_operands({ops[0], ops[1]}, n)};
}

TensorType bitwise_not(const Graph& g, const Node& n) {
  const TensorType& t = in(g, n, 0);
  if (is_floating(t.dtype)) bad(n, "expects a bool or integer input");
  return t;
}

// fill(self, value): self's type, every element `value` (a number or a zero-dim tensor).
TensorType fill(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "value"}));
  if (ops[1].tensor && ops[1].type.rank() != 0) bad(n, "a tensor value must be zero-dimensional");
  return in(g, n, 0);
}

TensorType logical_not(const Graph& g, const Node& n) { return {DType::boolean, in(g, n, 0).shape}; }

TensorType to_copy(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (auto d = dtype_attr(n)) t.dtype = *d;
  return t;
}

TensorType identity(const Graph& g, const Node& n) {
  if (n.op == "aten.dropout" && n.attr_bool("train", false) && n.attr_float("p", 0) > 0)
    bad(n, "dropout in training mode is not supported (export the model in eval mode)");
  return in(g, n, 0);
}

// ---- reductions ---------------------------------------------------------------------------

TensorType reduction(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto dims = reduce_dims(n, "dim", x.rank());
  TensorType t{x.dtype, reduced_shape(x.shape, dims, n.attr_bool("keepdim", false))};
  if (auto d = dtype_attr(n)) t.dtype = *d;
  else if (n.op == "aten.sum" && !is_floating(x.dtype)) t.dtype = DType::i64;
  if ((n.op == "aten.mean" || n.op == "aten.var") && !is_floating(t.dtype))
    bad(n, strcat("expects a floating input, got ", dtype_name(t.dtype)));
  if ((n.op == "aten.amax" || n.op == "aten.amin") && !is_floating(t.dtype))
    bad(n, "integer amax/amin is not supported");
  return t;
}

// any / all: a bool reduction of any input dtype.
TensorType any_all(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  return {DType::boolean, reduced_shape(x.shape, reduce_dims(n, "dim", x.rank()), n.attr_bool("keepdim", false))};
}

// ---- more pointwise (the core ATen set) -------------------------------------------------

// floor, ceil, round, trunc, sign: the input's dtype (integers pass through).
TensorType rounding(const Graph& g, const Node& n) {
  const TensorType& t = in(g, n, 0);
  if (t.dtype == DType::boolean) bad(n, "bool input is not supported");
  return t;
}

TensorType is_test(const Graph& g, const Node& n) { return {DType::boolean, in(g, n, 0).shape}; }

// bitwise_and/or/xor: bool or integer operands, promoted.
TensorType bitwise(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "other"}));
  TensorType t{result_type(ops), broadcast_operands(ops, n)};
  if (is_floating(t.dtype)) bad(n, "expects bool or integer operands");
  return t;
}

TensorType logical(const Graph& g, const Node& n) {
  auto ops = operand_types(g, n.inputs, bind(n, {"self", "other"}));
  return {DType::boolean, broadcast_operands(ops, n)};
}

}  // namespace

// clamp(self, min?, max?): each bound a number attr or, in order, a tensor input.
std::vector<Operand> clamp_operands(const Node& n) {
  std::vector<Operand> ops(3);
  ops[0].input = 0;
  int next = 1;
  const char* keys[2] = {n.op == "aten.hardtanh" ? "min_val" : "min", n.op == "aten.hardtanh" ? "max_val" : "max"};
  bool want[2] = {n.op != "aten.clamp_max", n.op != "aten.clamp_min"};
  for (int k = 0; k < 2; ++k) {
    if (!want[k]) continue;
    auto it = n.attrs.find(keys[k]);
    if (it != n.attrs.end()) ops[static_cast<size_t>(k + 1)].scalar = it->second;
    else if (next < static_cast<int>(n.inputs.size())) ops[static_cast<size_t>(k + 1)].input = next++;
    else if (n.op == "aten.hardtanh") ops[static_cast<size_t>(k + 1)].scalar = k == 0 ? -1.0 : 1.0;
    else ops[static_cast<size_t>(k + 1)].input = -2;  // absent
  }
  if (next != static_cast<int>(n.inputs.size())) bad(n, "more tensor inputs than bounds");
  return ops;
}

namespace {

TensorType clamp(const Graph& g, const Node& n) {
  auto ops = clamp_operands(n);
  std::vector<Operand> present;
  for (const auto& o : ops)
    if (o.input != -2) present.push_back(o);
  auto types = operand_types(g, n.inputs, present);
  TensorType t{result_type(types), broadcast_operands(types, n)};
  if (t.dtype == DType::boolean) bad(n, "bool clamp is not supported");
  return t;
}

TensorType floating_same(const Graph& g, const Node& n) {
  const TensorType& t = in(g, n, 0);
  if (!is_floating(t.dtype)) bad(n, strcat("expects a floating input, got ", dtype_name(t.dtype)));
  return t;
}

// full_like / zeros_like / ones_like / empty_like: self's shape, {dtype} or self's dtype.
TensorType like(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (auto d = dtype_attr(n)) t.dtype = *d;
  return t;
}

// empty / empty_strided: zeros of {size} (the values are unspecified in torch).
TensorType empty(const Graph&, const Node& n) {
  TensorType t{dtype_attr(n).value_or(DType::f32), n.attr_ints("size")};
  for (auto d : t.shape)
    if (d < 1) bad(n, "empty or negative size");
  return t;
}

// copy(self, src): src converted to self's dtype and broadcast to its shape.
TensorType copy(const Graph& g, const Node& n) {
  if (broadcast_shapes(in(g, n, 1).shape, in(g, n, 0).shape, n) != in(g, n, 0).shape)
    bad(n, strcat("src ", shape_str(in(g, n, 1).shape), " does not broadcast to ", shape_str(in(g, n, 0).shape)));
  return in(g, n, 0);
}

// native_dropout (eval): result 0 the input, result 1 an all-true mask.
TensorType native_dropout(const Graph& g, const Node& n) {
  if (n.attr_bool("train", false) && n.attr_float("p", 0) > 0)
    bad(n, "dropout in training mode is not supported (export the model in eval mode)");
  TensorType t = in(g, n, 0);
  if (result_index(n, 2) == 1) t.dtype = DType::boolean;
  return t;
}

// Batch norm over dim 1 of [N, C, *]: _native_batch_norm_legit_no_training (running stats),
// _native_batch_norm_legit (running stats or, training, batch stats; no_stats: batch stats).
// Result 0 the output; 1 and 2 (batch stats only) the mean and rstd per channel [C].
TensorType batch_norm(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  if (x.rank() < 2) bad(n, "expects [N, C, *]");
  if (!is_floating(x.dtype)) bad(n, "expects a floating input");
  int64_t r = result_index(n, 3);
  if (r == 0) return x;
  return {x.dtype, {x.shape[1]}};
}

// native_group_norm(input [N, C, *], weight?, bias?, N, C, HxW, group, eps): result 0 the
// output, 1 mean and 2 rstd of shape [N, group].
TensorType group_norm(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  int64_t groups = n.attr_int("group");
  if (x.rank() < 2 || groups < 1 || x.shape[1] % groups) bad(n, strcat("C = ", x.rank() > 1 ? x.shape[1] : 0, " is not a multiple of group = ", groups));
  if (!is_floating(x.dtype)) bad(n, "expects a floating input");
  if (result_index(n, 3) == 0) return x;
  return {x.dtype, {x.shape[0], groups}};
}

// repeat(self, repeats): tile; repeat_interleave(self, {repeats} int, {dim}?): each element
// (of the flattened self when dim is absent) `repeats` times.
TensorType repeat(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto reps = n.attr_ints("repeats");
  if (reps.size() < x.shape.size()) bad(n, "repeats has fewer entries than self has dims");
  Shape s(reps.size());
  size_t lead = reps.size() - x.shape.size();
  for (size_t i = 0; i < reps.size(); ++i) {
    s[i] = reps[i] * (i < lead ? 1 : x.shape[i - lead]);
    if (s[i] < 1) bad(n, "empty results are not supported");
  }
  return {x.dtype, s};
}

TensorType repeat_interleave(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  if (n.inputs.size() > 1) bad(n, "a tensor of repeats is not supported (the result shape depends on its values)");
  int64_t r = n.attr_int("repeats");
  if (r < 1) bad(n, "repeats must be >= 1");
  if (!n.has_attr("dim")) return {x.dtype, {x.numel() * r}};
  TensorType t = x;
  t.shape[static_cast<size_t>(normalize_dim(n.attr_int("dim"), x.rank(), n))] *= r;
  return t;
}

// Scaled dot-product attention: query [..., L, E], key [..., S, E], value [..., S, Ev] ->
// [..., L, Ev]; with enable_gqa the key/value heads (dim -3) repeat to the query's.
// Variants: scaled_dot_product_attention, _scaled_dot_product_flash_attention_for_cpu
// (result 1: logsumexp [..., L]), _scaled_dot_product_efficient_attention and
// _scaled_dot_product_flash_attention and _scaled_dot_product_cudnn_attention (result 0 only:
// the GPU variants, as an export on CUDA writes them).
TensorType sdpa(const Graph& g, const Node& n) {
  const TensorType& q = in(g, n, 0);
  const TensorType& k = in(g, n, 1);
  const TensorType& v = in(g, n, 2);
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() || q.shape.back() != k.shape.back() ||
      k.shape[k.shape.size() - 2] != v.shape[v.shape.size() - 2])
    bad(n, strcat("expects query [..., L, E], key [..., S, E], value [..., S, Ev], got ", shape_str(q.shape), ", ",
                  shape_str(k.shape), ", ", shape_str(v.shape)));
  if (!is_floating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) bad(n, "expects floating q, k, v of one dtype");
  if (n.attr_float("dropout_p", 0) > 0) bad(n, "dropout in attention is not supported (export in eval mode)");
  int64_t r = n.attr_int("result", 0);
  bool lse = n.op == "aten._scaled_dot_product_flash_attention_for_cpu";
  if (r < 0 || r > (lse ? 1 : 0)) bad(n, strcat("result ", r, " is not supported (the output", lse ? " and logsumexp" : "", " only)"));
  TensorType t{q.dtype, q.shape};
  if (r == 1) {
    t.shape.pop_back();
    t.dtype = DType::f32;
    return t;
  }
  t.shape.back() = v.shape.back();
  return t;
}

// ---- shapes -------------------------------------------------------------------------------

TensorType view(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  return {x.dtype, infer_size(n, n.attr_ints(n.op == "aten.reshape" ? "shape" : "size"), x.numel())};
}

TensorType unsqueeze(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  int64_t d = normalize_dim(n.attr_int("dim"), t.rank() + 1, n);
  t.shape.insert(t.shape.begin() + d, 1);
  return t;
}

TensorType squeeze(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto dims = reduce_dims(n, "dim", x.rank());
  TensorType t{x.dtype, {}};
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (x.shape[i] != 1 || std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) == dims.end())
      t.shape.push_back(x.shape[i]);
  return t;
}

TensorType permute(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto dims = n.attr_ints("dims");
  if (static_cast<int>(dims.size()) != x.rank() || normalize_dims(dims, x.rank(), n).size() != dims.size())
    bad(n, strcat("dims ", format_attr(dims), " is not a permutation of rank ", x.rank()));
  TensorType t{x.dtype, {}};
  for (auto d : dims) t.shape.push_back(x.shape[static_cast<size_t>(normalize_dim(d, x.rank(), n))]);
  return t;
}

TensorType transpose(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (n.op == "aten.t") {
    if (t.rank() > 2) bad(n, strcat("expects rank <= 2, got ", shape_str(t.shape)));
    std::reverse(t.shape.begin(), t.shape.end());
    return t;
  }
  if (t.rank() == 0) return t;
  auto a = static_cast<size_t>(normalize_dim(n.attr_int("dim0"), t.rank(), n));
  auto b = static_cast<size_t>(normalize_dim(n.attr_int("dim1"), t.rank(), n));
  std::swap(t.shape[a], t.shape[b]);
  return t;
}

TensorType expand(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  Shape s = n.attr_ints("size");
  if (s.size() < x.shape.size()) bad(n, strcat("cannot expand ", shape_str(x.shape), " to ", format_attr(s)));
  size_t lead = s.size() - x.shape.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) {
      if (s[i] < 0) bad(n, strcat("size ", format_attr(n.attr_ints("size")), ": -1 in a new leading dim"));
      continue;
    }
    int64_t have = x.shape[i - lead];
    if (s[i] == -1) s[i] = have;
    if (have != 1 && have != s[i]) bad(n, strcat("cannot expand ", shape_str(x.shape), " to ", format_attr(n.attr_ints("size"))));
  }
  return {x.dtype, s};
}

TensorType slice(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (t.rank() == 0) bad(n, "cannot slice a zero-dimensional tensor");
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim", 0), t.rank(), n));
  t.shape[d] = slice_range(n, t.shape[d]).length();  // may be 0: only cat may use it (passes/decompose.cpp)
  return t;
}

TensorType select(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (t.rank() == 0) bad(n, "cannot select from a zero-dimensional tensor");
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim"), t.rank(), n));
  int64_t i = n.attr_int("index");
  if (i < -t.shape[d] || i >= t.shape[d]) bad(n, strcat("index ", i, " out of range for size ", t.shape[d]));
  t.shape.erase(t.shape.begin() + static_cast<std::ptrdiff_t>(d));
  return t;
}

// slice_scatter / select_scatter: self with a slice (one index) replaced by src. Only step-1
// slices: they decompose into cat(before, src, after).
TensorType scatter(const Graph& g, const Node& n) {
  same_dtype(g, n);
  const TensorType& t = in(g, n, 0);
  if (t.rank() == 0) bad(n, "cannot scatter into a zero-dimensional tensor");
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim", 0), t.rank(), n));
  Shape want = t.shape;
  if (n.op == "aten.select_scatter") {
    int64_t i = n.attr_int("index");
    if (i < -t.shape[d] || i >= t.shape[d]) bad(n, strcat("index ", i, " out of range for size ", t.shape[d]));
    want.erase(want.begin() + static_cast<std::ptrdiff_t>(d));
  } else {
    SliceRange r = slice_range(n, t.shape[d]);
    if (r.step != 1) bad(n, "only step 1 is supported");
    want[d] = r.length();
  }
  if (in(g, n, 1).shape != want)
    bad(n, strcat("src has shape ", shape_str(in(g, n, 1).shape), ", the slice is ", shape_str(want)));
  return t;
}

TensorType cat(const Graph& g, const Node& n) {
  std::vector<OperandType> ops;
  for (size_t i = 0; i < n.inputs.size(); ++i) ops.push_back({true, in(g, n, i)});
  TensorType t = in(g, n, 0);
  t.dtype = result_type(ops);
  if (t.rank() == 0) bad(n, "cannot concatenate zero-dimensional tensors");
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim", 0), t.rank(), n));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const auto& u = in(g, n, i);
    bool ok = u.rank() == t.rank();
    for (size_t k = 0; ok && k < u.shape.size(); ++k) ok = k == d || u.shape[k] == t.shape[k];
    if (!ok) bad(n, strcat("input ", i, " has shape ", shape_str(u.shape), ", incompatible with ", shape_str(in(g, n, 0).shape)));
    t.shape[d] += u.shape[d];
  }
  return t;
}

// stack {dim}: equal shapes, a new dim of size len(inputs) at `dim`.
TensorType stack(const Graph& g, const Node& n) {
  std::vector<OperandType> ops;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ops.push_back({true, in(g, n, i)});
    if (in(g, n, i).shape != in(g, n, 0).shape)
      bad(n, strcat("input ", i, " has shape ", shape_str(in(g, n, i).shape), ", input 0 has ", shape_str(in(g, n, 0).shape)));
  }
  TensorType t{result_type(ops), in(g, n, 0).shape};
  int64_t d = normalize_dim(n.attr_int("dim", 0), t.rank() + 1, n);
  t.shape.insert(t.shape.begin() + d, static_cast<int64_t>(n.inputs.size()));
  return t;
}

// split / split_with_sizes / unbind: the `result`-th piece along `dim`.
TensorType split(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (t.rank() == 0) bad(n, "cannot split a zero-dimensional tensor");
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim", 0), t.rank(), n));
  int64_t size = t.shape[d];
  if (n.op == "aten.unbind") {
    result_index(n, size);
    t.shape.erase(t.shape.begin() + static_cast<std::ptrdiff_t>(d));
    return t;
  }
  std::vector<int64_t> sizes;
  if (n.op == "aten.split") {
    int64_t step = n.attr_int("split_size");
    if (step < 1) bad(n, "split_size must be >= 1");
    for (int64_t s = 0; s < size; s += step) sizes.push_back(std::min(step, size - s));
  } else {
    sizes = n.attr_ints("split_sizes");
    int64_t total = 0;
    for (auto s : sizes) total += s;
    if (total != size) bad(n, strcat("split_sizes ", format_attr(sizes), " do not add up to ", size));
  }
  t.shape[d] = sizes[static_cast<size_t>(result_index(n, static_cast<int64_t>(sizes.size())))];
  if (t.shape[d] == 0) bad(n, "empty pieces are not supported");
  return t;
}

TensorType embedding(const Graph& g, const Node& n) {
  const auto& w = in(g, n, 0);
  const auto& idx = in(g, n, 1);
  if (w.rank() != 2) bad(n, strcat("weight must be [V, D], got ", shape_str(w.shape)));
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32) bad(n, strcat("indices must be integers, got ", dtype_name(idx.dtype)));
  TensorType t{w.dtype, idx.shape};
  t.shape.push_back(w.shape[1]);
  return t;
}

// ---- matmul family ------------------------------------------------------------------------

// torch.matmul shapes, including 1-D operands on either side.
Shape matmul_shape(const Node& n, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) bad(n, "matmul of a zero-dimensional tensor");
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  if (a2.back() != b2[b2.size() - 2])
    bad(n, strcat("inner dimensions differ: ", shape_str(a), " x ", shape_str(b)));
  Shape out = broadcast_shapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2), n);
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

TensorType mm(const Graph& g, const Node& n) {
  same_dtype(g, n);
  const auto& a = in(g, n, 0);
  const auto& b = in(g, n, 1);
  if (n.op == "aten.mm" && (a.rank() != 2 || b.rank() != 2)) bad(n, "expects two 2-D matrices");
  if (n.op == "aten.mv" && (a.rank() != 2 || b.rank() != 1)) bad(n, "expects a 2-D matrix and a 1-D vector");
  if (n.op == "aten.bmm" && (a.rank() != 3 || b.rank() != 3 || a.shape[0] != b.shape[0]))
    bad(n, strcat("expects [B, M, K] x [B, K, N], got ", shape_str(a.shape), " x ", shape_str(b.shape)));
  return {a.dtype, matmul_shape(n, a.shape, b.shape)};
}

// addmm / baddbmm: beta * self + alpha * (m1 @ m2); self broadcasts to the product.
TensorType add_mm(const Graph& g, const Node& n) {
  same_dtype(g, n);
  const auto& a = in(g, n, 1);
  const auto& b = in(g, n, 2);
  size_t r = n.op == "aten.addmm" ? 2 : 3;
  if (a.shape.size() != r || b.shape.size() != r) bad(n, strcat("expects ", r, "-D operands"));
  Shape prod = matmul_shape(n, a.shape, b.shape);
  if (broadcast_shapes(in(g, n, 0).shape, prod, n) != prod)
    bad(n, strcat("self ", shape_str(in(g, n, 0).shape), " does not broadcast to ", shape_str(prod)));
  return {a.dtype, prod};
}

// linear(input [..., K], weight [N, K], bias [N]?) -> [..., N]
TensorType linear(const Graph& g, const Node& n) {
  same_dtype(g, n);
  const auto& x = in(g, n, 0);
  const auto& w = in(g, n, 1);
  if (w.rank() != 2 || x.rank() < 1 || x.shape.back() != w.shape[1])
    bad(n, strcat("expects [..., K] and [N, K], got ", shape_str(x.shape), " and ", shape_str(w.shape)));
  TensorType t = x;
  t.shape.back() = w.shape[0];
  if (n.inputs.size() > 2 && broadcast_shapes(in(g, n, 2).shape, t.shape, n) != t.shape)
    bad(n, strcat("bias ", shape_str(in(g, n, 2).shape), " does not broadcast to ", shape_str(t.shape)));
  return t;
}

// ---- normalisation and softmax ------------------------------------------------------------

// native_layer_norm -> (out, mean, rstd); layer_norm -> out. Statistics keep the batch dims
// with size-1 normalised dims.
TensorType layer_norm(const Graph& g, const Node& n) {
  same_dtype(g, n);
  const auto& x = in(g, n, 0);
  Shape ns = n.attr_ints("normalized_shape");
  auto k = static_cast<int>(ns.size());
  if (k < 1 || k > x.rank() || !std::equal(ns.begin(), ns.end(), x.shape.end() - k))
    bad(n, strcat("normalized_shape ", format_attr(ns), " is not a suffix of ", shape_str(x.shape)));
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (in(g, n, i).shape != ns) bad(n, strcat("input ", i, " has shape ", shape_str(in(g, n, i).shape), ", expected ", shape_str(ns)));
  if (!is_floating(x.dtype)) bad(n, "expects a floating input");
  if (n.op == "aten.layer_norm" || result_index(n, 3) == 0) return x;
  TensorType t = x;
  for (int i = 0; i < k; ++i) t.shape[t.shape.size() - 1 - static_cast<size_t>(i)] = 1;
  return t;
}

TensorType softmax(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  normalize_dim(n.attr_int("dim"), std::max(t.rank(), 1), n);
  if (n.attr_bool("half_to_float", false)) {
    if (t.dtype != DType::f16) bad(n, "half_to_float needs an f16 input");
    t.dtype = DType::f32;
  }
  if (auto d = dtype_attr(n)) t.dtype = *d;
  if (!is_floating(t.dtype)) bad(n, "expects a floating input");
  return t;
}

// ---- constants ----------------------------------------------------------------------------

TensorType full(const Graph&, const Node& n) {
  TensorType t;
  t.shape = n.op == "aten.scalar_tensor" ? Shape{} : n.attr_ints("size");
  for (auto d : t.shape)
    if (d < 1) bad(n, "empty or negative size");
  if (auto d = dtype_attr(n)) {
    t.dtype = *d;
  } else if (n.op == "aten.full") {
    // torch.full infers the dtype from the fill value.
    const AttrValue& v = n.attrs.count("fill_value") ? n.attrs.at("fill_value") : AttrValue(0.0);
    t.dtype = std::holds_alternative<bool>(v) ? DType::boolean : std::holds_alternative<int64_t>(v) ? DType::i64 : DType::f32;
  }
  if (n.op == "aten.full") (void)bind(n, {"fill_value"});
  if (n.op == "aten.scalar_tensor") (void)bind(n, {"s"});
  return t;
}

struct Entry {
  const char* name;
  int lo, hi;
  Infer infer;
  const char* doc;
};

// Every ATen op the frontend can hand us. Order: as `lpu list ops` prints them.
const Entry kEntries[] = {
    // pointwise
    {"aten.add", 1, 2, binary_arith, "self + alpha * other"},
    {"aten.sub", 1, 2, binary_arith, "self - alpha * other"},
    {"aten.rsub", 1, 2, binary_arith, "other - alpha * self"},
    {"aten.mul", 1, 2, binary_arith, "self * other"},
    {"aten.div", 1, 2, binary_arith, "self / other (true division; no rounding_mode)"},
    {"aten.maximum", 2, 2, binary_arith, "element-wise max"},
    {"aten.minimum", 2, 2, binary_arith, "element-wise min"},
    {"aten.pow", 1, 2, pow, "self ** exponent"},
    {"aten.eq", 1, 2, compare, "self == other"},
    {"aten.ne", 1, 2, compare, "self != other"},
    {"aten.lt", 1, 2, compare, "self < other"},
    {"aten.le", 1, 2, compare, "self <= other"},
    {"aten.gt", 1, 2, compare, "self > other"},
    {"aten.ge", 1, 2, compare, "self >= other"},
    {"aten.where", 1, 3, where, "where(condition, self, other)"},
    {"aten.masked_fill", 2, 3, masked_fill, "where(mask, value, self)"},
    {"aten.bitwise_not", 1, 1, bitwise_not, "~self (bool or integer)"},
    {"aten.logical_not", 1, 1, logical_not, "self == 0"},
    {"aten.fill", 1, 2, fill, "self's shape filled with value"},
    {"aten.neg", 1, 1, unary_same, "-self"},
    {"aten.abs", 1, 1, unary_same, "|self|"},
    {"aten.relu", 1, 1, unary_same, "max(self, 0)"},
    {"aten.exp", 1, 1, unary_float, "exp"},
    {"aten.log", 1, 1, unary_float, "natural log"},
    {"aten.sqrt", 1, 1, unary_float, "square root"},
    {"aten.rsqrt", 1, 1, unary_float, "1 / sqrt"},
    {"aten.reciprocal", 1, 1, unary_float, "1 / self"},
    {"aten.erf", 1, 1, unary_float, "error function"},
    {"aten.tanh", 1, 1, unary_float, "tanh"},
    {"aten.sin", 1, 1, unary_float, "sine"},
    {"aten.cos", 1, 1, unary_float, "cosine"},
    {"aten.sigmoid", 1, 1, unary_float, "1 / (1 + exp(-self))"},
    {"aten.gelu", 1, 1, unary_floating_only, "gelu {approximate = \"none\" | \"tanh\"}"},
    {"aten.silu", 1, 1, unary_floating_only, "self * sigmoid(self)"},
    {"aten.tan", 1, 1, unary_float, "tangent"},
    {"aten.asin", 1, 1, unary_float, "arc sine"},
    {"aten.acos", 1, 1, unary_float, "arc cosine"},
    {"aten.atan", 1, 1, unary_float, "arc tangent"},
    {"aten.sinh", 1, 1, unary_float, "hyperbolic sine"},
    {"aten.cosh", 1, 1, unary_float, "hyperbolic cosine"},
    {"aten.asinh", 1, 1, unary_float, "inverse hyperbolic sine"},
    {"aten.acosh", 1, 1, unary_float, "inverse hyperbolic cosine"},
    {"aten.atanh", 1, 1, unary_float, "inverse hyperbolic tangent"},
    {"aten.expm1", 1, 1, unary_float, "exp(x) - 1"},
    {"aten.log1p", 1, 1, unary_float, "log(1 + x)"},
    {"aten.log2", 1, 1, unary_float, "base-2 log"},
    {"aten.log10", 1, 1, unary_float, "base-10 log"},
    {"aten.floor", 1, 1, rounding, "round down (integers unchanged)"},
    {"aten.ceil", 1, 1, rounding, "round up (integers unchanged)"},
    {"aten.round", 1, 1, rounding, "round half to even (integers unchanged)"},
    {"aten.trunc", 1, 1, rounding, "round toward zero (integers unchanged)"},
    {"aten.sign", 1, 1, rounding, "-1, 0 or 1"},
    {"aten.isnan", 1, 1, is_test, "self is NaN -> bool"},
    {"aten.isinf", 1, 1, is_test, "self is +-inf -> bool"},
    {"aten.atan2", 1, 2, binary_arith, "atan2(self, other)"},
    {"aten.fmod", 1, 2, binary_arith, "C fmod: remainder with the sign of self"},
    {"aten.remainder", 1, 2, binary_arith, "Python %: remainder with the sign of other"},
    {"aten.bitwise_and", 1, 2, bitwise, "self & other (bool or integer)"},
    {"aten.bitwise_or", 1, 2, bitwise, "self | other (bool or integer)"},
    {"aten.bitwise_xor", 1, 2, bitwise, "self ^ other (bool or integer)"},
    {"aten.logical_and", 1, 2, logical, "self != 0 and other != 0"},
    {"aten.logical_or", 1, 2, logical, "self != 0 or other != 0"},
    {"aten.logical_xor", 1, 2, logical, "(self != 0) != (other != 0)"},
    {"aten.clamp", 1, 3, clamp, "min(max(self, {min}), {max}) (numbers or tensors)"},
    {"aten.clamp_min", 1, 2, clamp, "max(self, {min})"},
    {"aten.clamp_max", 1, 2, clamp, "min(self, {max})"},
    {"aten.hardtanh", 1, 1, clamp, "clamp to [{min_val} = -1, {max_val} = 1]"},
    {"aten.leaky_relu", 1, 1, floating_same, "x > 0 ? x : {negative_slope} * x"},
    {"aten.elu", 1, 1, floating_same, "x > 0 ? {scale} x : {scale} {alpha} (exp({input_scale} x) - 1)"},
    {"aten.full_like", 1, 1, like, "self's shape filled with {fill_value}, {dtype}"},
    {"aten.zeros_like", 1, 1, like, "zeros of self's shape, {dtype}"},
    {"aten.ones_like", 1, 1, like, "ones of self's shape, {dtype}"},
    {"aten.empty_like", 1, 1, like, "self's shape (zeros), {dtype}"},
    {"aten.empty", 0, 0, empty, "uninitialised {size} (zeros), {dtype}"},
    {"aten.empty_strided", 0, 0, empty, "uninitialised {size} (zeros; {stride} ignored), {dtype}"},
    {"aten.copy", 2, 2, copy, "src converted to self's dtype, broadcast to self's shape"},
    {"aten.native_dropout", 1, 1, native_dropout, "eval-mode dropout: result 0 input, 1 all-true mask"},
    {"aten._to_copy", 1, 1, to_copy, "type conversion {dtype}"},
    {"aten.clone", 1, 1, identity, "copy (values unchanged)"},
    {"aten.alias", 1, 1, identity, "alias (values unchanged)"},
    {"aten.detach", 1, 1, identity, "detach (values unchanged)"},
    {"aten.lift_fresh_copy", 1, 1, identity, "copy of a constant"},
    {"aten.dropout", 1, 1, identity, "dropout in eval mode (identity)"},
    // reductions
    {"aten.sum", 1, 1, reduction, "sum over {dim} (all if absent), {keepdim}, {dtype}"},
    {"aten.mean", 1, 1, reduction, "mean over {dim}, {keepdim}, {dtype}"},
    {"aten.amax", 1, 1, reduction, "max over {dim}, {keepdim}"},
    {"aten.amin", 1, 1, reduction, "min over {dim}, {keepdim}"},
    {"aten.any", 1, 1, any_all, "any element != 0 over {dim} (all if absent), {keepdim} -> bool"},
    {"aten.all", 1, 1, any_all, "every element != 0 over {dim} (all if absent), {keepdim} -> bool"},
    {"aten.var", 1, 1, reduction, "variance over {dim}, {correction} or {unbiased}, {keepdim}"},
    // shapes and indexing
    {"aten.view", 1, 1, view, "reshape to {size}"},
    {"aten._unsafe_view", 1, 1, view, "reshape to {size}"},
    {"aten.view_copy", 1, 1, view, "reshape to {size}"},
    {"aten._reshape_alias", 1, 1, view, "reshape to {size} (stride ignored: values are contiguous)"},
    {"aten.reshape", 1, 1, view, "reshape to {shape}"},
    {"aten.unsqueeze", 1, 1, unsqueeze, "insert a size-1 {dim}"},
    {"aten.squeeze", 1, 1, squeeze, "drop size-1 dims ({dim}: int, list or all)"},
    {"aten.permute", 1, 1, permute, "permute {dims}"},
    {"aten.transpose", 1, 1, transpose, "swap {dim0} and {dim1}"},
    {"aten.t", 1, 1, transpose, "transpose of a matrix"},
    {"aten.expand", 1, 1, expand, "broadcast to {size} (-1 keeps a dim)"},
    {"aten.slice", 1, 1, slice, "{dim, start, end, step}"},
    {"aten.select", 1, 1, select, "index {index} of {dim}, dropping it"},
    {"aten.cat", 1, 1 << 20, cat, "concatenate along {dim}"},
    {"aten.slice_scatter", 2, 2, scatter, "self with self[{start}:{end}] along {dim} replaced by src (step 1)"},
    {"aten.select_scatter", 2, 2, scatter, "self with index {index} of {dim} replaced by src"},
    {"aten.stack", 1, 1 << 20, stack, "stack along a new {dim}"},
    {"aten.split", 1, 1, split, "piece {result} of chunks of {split_size} along {dim}"},
    {"aten.split_with_sizes", 1, 1, split, "piece {result} of {split_sizes} along {dim}"},
    {"aten.unbind", 1, 1, split, "slice {result} of {dim}, dropping it"},
    {"aten.embedding", 2, 2, embedding, "rows of weight by integer indices"},
    {"aten.repeat", 1, 1, repeat, "tile self {repeats} times per dim"},
    {"aten.repeat_interleave", 1, 1, repeat_interleave, "each element {repeats} times along {dim} (flattened if absent)"},
    // matmul family
    {"aten.mm", 2, 2, mm, "[M, K] x [K, N]"},
    {"aten.mv", 2, 2, mm, "[M, K] x [K]"},
    {"aten.bmm", 2, 2, mm, "[B, M, K] x [B, K, N]"},
    {"aten.matmul", 2, 2, mm, "torch.matmul"},
    {"aten.addmm", 3, 3, add_mm, "beta * self + alpha * (mat1 @ mat2)"},
    {"aten.baddbmm", 3, 3, add_mm, "beta * self + alpha * (batch1 @ batch2)"},
    {"aten.linear", 2, 3, linear, "input @ weight^T + bias"},
    // normalisation, softmax
    {"aten.native_layer_norm", 1, 3, layer_norm, "layer norm over {normalized_shape} {eps}; {result} 0 out, 1 mean, 2 rstd"},
    {"aten.layer_norm", 1, 3, layer_norm, "layer norm over {normalized_shape} {eps}"},
    {"aten._softmax", 1, 1, softmax, "softmax over {dim}, {half_to_float}"},
    {"aten.softmax", 1, 1, softmax, "softmax over {dim}, {dtype}"},
    {"aten._log_softmax", 1, 1, softmax, "log of softmax over {dim}, {half_to_float}"},
    {"aten.log_softmax", 1, 1, softmax, "log of softmax over {dim}, {dtype}"},
    {"aten._native_batch_norm_legit_no_training", 3, 5, batch_norm, "batch norm with running stats {eps}"},
    {"aten._native_batch_norm_legit", 1, 5, batch_norm, "batch norm {training}: batch or running stats {eps}; results 1, 2 mean, rstd"},
    {"aten.native_group_norm", 1, 3, group_norm, "group norm of [N, C, *] over {group} groups {eps}; results 1, 2 mean, rstd"},
    {"aten.scaled_dot_product_attention", 3, 4, sdpa, "softmax(q k^T * {scale} + mask) v, {is_causal}, {enable_gqa}"},
    {"aten._scaled_dot_product_flash_attention_for_cpu", 3, 4, sdpa, "SDPA; result 1 logsumexp"},
    {"aten._scaled_dot_product_efficient_attention", 3, 4, sdpa, "SDPA (result 0)"},
    {"aten._scaled_dot_product_flash_attention", 3, 3, sdpa, "SDPA (result 0)"},
    {"aten._scaled_dot_product_cudnn_attention", 3, 4, sdpa, "SDPA (result 0; what CUDA exports with the cuDNN backend)"},
    // constants
    {"aten.full", 0, 0, full, "constant {fill_value} of {size}, {dtype}"},
    {"aten.scalar_tensor", 0, 0, full, "zero-dim constant {s}, {dtype}"},
    {"aten.ones", 0, 0, full, "ones of {size}, {dtype}"},
    {"aten.zeros", 0, 0, full, "zeros of {size}, {dtype}"},
};

}  // namespace

std::vector<OpInfo> registry() {
  std::vector<OpInfo> out;
  for (const auto& e : kEntries) {
    std::string name = e.name;
    bool multi = name == "aten.split" || name == "aten.split_with_sizes" || name == "aten.unbind" ||
                 name == "aten.native_layer_norm" || name == "aten.native_dropout" || name == "aten.native_group_norm" ||
                 name.find("batch_norm") != std::string::npos || name.find("_scaled_dot_product") != std::string::npos;
    Infer f = e.infer;
    // Only multi-result ops take `result`; elsewhere it would silently mean nothing.
    auto infer = [f, multi](const Graph& g, const Node& n) {
      if (!multi && n.has_attr("result")) bad(n, "this op has a single result; 'result' is not allowed");
      return f(g, n);
    };
    out.push_back({name, OpCategory::Composite, e.lo, e.hi, infer, e.doc});
  }
  return out;
}

}  // namespace lpu::aten
