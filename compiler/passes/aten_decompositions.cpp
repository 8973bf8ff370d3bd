// The ATen table: every aten.* op of the registry (graph/aten_ops.cpp) -> core ops (and our
// own composites layer_norm/gelu/silu/softmax, expanded further). Argument conventions:
// graph/aten.h. Operands are converted to the result dtype the registry inferred (ATen type
// promotion), numbers become zero-dim `full` constants, and shape-only ops reduce to
// reshape/permute/expand/slice/cat with canonical attributes (non-negative dims, clamped
// ranges); a no-op (view to the same shape, full-range slice) returns its input.
#include <cmath>
#include <numeric>

#include "graph/aten.h"
#include "graph/ops.h"
#include "passes/decompose.h"
#include "support/error.h"

namespace lpu {
namespace {

using In = std::vector<NodeId>;
using aten::Operand;

NodeId operand(Builder& b, const In& in, const Operand& o, DType t) {
  return o.is_tensor() ? b.cast(in[static_cast<size_t>(o.input)], t) : b.scalar(o.value(), t);
}

DType out_dtype(const Builder& b) { return b.src.type.dtype; }

std::vector<int64_t> iota_dims(int64_t from, int64_t to) {
  std::vector<int64_t> d(static_cast<size_t>(to - from));
  std::iota(d.begin(), d.end(), from);
  return d;
}

// ---- pointwise ----------------------------------------------------------------------------

NodeId same(Builder&, const In& in) { return in[0]; }

NodeId to_copy(Builder& b, const In& in) { return b.cast(in[0], out_dtype(b)); }

Expander unary(const std::string& core) {
  return [core](Builder& b, const In& in) { return b.call(core, {b.cast(in[0], out_dtype(b))}); };
}

NodeId neg(Builder& b, const In& in) {
  if (is_floating(out_dtype(b))) return b.call("neg", {in[0]});
  return b.call("sub", {b.scalar(0), in[0]});
}

NodeId abs(Builder& b, const In& in) {
  if (is_floating(out_dtype(b))) return b.call("abs", {in[0]});
  return b.call("maximum", {in[0], b.call("sub", {b.scalar(0), in[0]})});
}

NodeId relu(Builder& b, const In& in) {
  if (is_floating(out_dtype(b))) return b.call("relu", {in[0]});
  return b.call("maximum", {in[0], b.scalar(0)});
}

NodeId gelu(Builder& b, const In& in) {
  return b.call("gelu", {in[0]}, {{"approximate", b.src.attr_str("approximate", "none")}});
}

NodeId silu(Builder& b, const In& in) { return b.call("silu", {in[0]}); }

// self OP alpha * other (rsub: other - alpha * self).
Expander arith(const std::string& core, bool reversed = false) {
  return [core, reversed](Builder& b, const In& in) {
    auto ops = aten::bind(b.src, {"self", "other"});
    NodeId x = operand(b, in, ops[0], out_dtype(b));
    NodeId y = operand(b, in, ops[1], out_dtype(b));
    if (reversed) std::swap(x, y);
    double alpha = b.src.attr_float("alpha", 1.0);
    if (alpha != 1.0) y = b.call("mul", {y, b.scalar(alpha)}, {}, "alpha");
    return b.call(core, {x, y});
  };
}

// Small constant exponents become cheaper exact ops; the rest stay pow.
NodeId pow(Builder& b, const In& in) {
  auto ops = aten::bind(b.src, {"self", "exponent"});
  NodeId x = operand(b, in, ops[0], out_dtype(b));
  if (!ops[1].is_tensor() && ops[0].is_tensor() && b.type(x) == b.src.type) {
    double e = ops[1].value();
    if (e == 1) return x;
    if (e == 2) return b.call("mul", {x, x}, {}, "square");
    if (is_floating(out_dtype(b))) {
      if (e == 0.5) return b.call("sqrt", {x});
      if (e == -0.5) return b.call("rsqrt", {x});
      if (e == -1) return b.call("reciprocal", {x});
    }
  }
  return b.call("pow", {x, operand(b, in, ops[1], out_dtype(b))});
}

// Comparisons happen in the operands' promoted dtype.
Expander compare(const std::string& core) {
  return [core](Builder& b, const In& in) {
    auto ops = aten::bind(b.src, {"self", "other"});
    DType t = aten::result_type(aten::operand_types(b.g, in, ops));
    return b.call(core, {operand(b, in, ops[0], t), operand(b, in, ops[1], t)});
  };
}

NodeId where(Builder& b, const In& in) {
  auto ops = aten::bind(b.src, {"condition", "self", "other"});
  return b.call("where", {in[0], operand(b, in, ops[1], out_dtype(b)), operand(b, in, ops[2], out_dtype(b))});
}

NodeId masked_fill(Builder& b, const In& in) {
  auto ops = aten::bind(b.src, {"self", "mask", "value"});
  return b.call("where", {in[1], operand(b, in, ops[2], out_dtype(b)), in[0]});
}

NodeId bitwise_not(Builder& b, const In& in) {
  if (out_dtype(b) == DType::boolean) return b.call("eq", {in[0], b.scalar(0)});
  return b.call("sub", {b.scalar(-1), in[0]});  // ~x == -1 - x in two's complement
}

NodeId fill(Builder& b, const In& in) {
  NodeId v = operand(b, in, aten::bind(b.src, {"self", "value"})[1], out_dtype(b));
  if (b.type(v).shape == b.src.type.shape) return v;
  return b.call("expand", {v}, {{"shape", b.src.type.shape}});
}

NodeId logical_not(Builder& b, const In& in) { return b.call("eq", {in[0], b.scalar(0, b.type(in[0]).dtype)}); }


// ---- more pointwise (the core ATen set) -------------------------------------------------

NodeId full_of(Builder& b, double v, const TensorType& t, const std::string& suffix = "full") {
  return b.g.add_call("full", {}, {{"value", v}, {"shape", t.shape}, {"dtype", std::string(dtype_name(t.dtype))}},
                      b.src.name + "_" + suffix);
}

// floor / ceil / round / trunc: integers are already whole.
Expander rounding(const std::string& core) {
  return [core](Builder& b, const In& in) { return is_floating(out_dtype(b)) ? b.call(core, {in[0]}) : in[0]; };
}

// A float op on operands of the result dtype; integer results compute in f32 and convert back.
Expander float_op(const std::string& core, std::initializer_list<const char*> names) {
  std::vector<const char*> keys(names);
  return [core, keys](Builder& b, const In& in) {
    DType t = out_dtype(b), ct = is_floating(t) ? t : DType::f32;
    std::vector<NodeId> args;
    if (keys.size() == 1) {
      args.push_back(b.cast(in[0], ct));
    } else {
      auto ops = aten::bind(b.src, {keys[0], keys[1]});
      for (const auto& o : ops) args.push_back(b.cast(operand(b, in, o, t), ct));
    }
    return b.cast(b.call(core, args), t);
  };
}

// isnan / isinf: integers never are.
Expander is_test(const std::string& core) {
  return [core](Builder& b, const In& in) {
    if (is_floating(b.type(in[0]).dtype)) return b.call(core, {in[0]});
    return b.call("ne", {in[0], in[0]});  // false everywhere, computed (an output may not be constant)
  };
}

Expander bitwise(const std::string& core) {
  return [core](Builder& b, const In& in) {
    auto ops = aten::bind(b.src, {"self", "other"});
    return b.call(core, {operand(b, in, ops[0], out_dtype(b)), operand(b, in, ops[1], out_dtype(b))});
  };
}

// logical_and / or / xor: on (x != 0) of each operand.
Expander logical(const std::string& core) {
  return [core](Builder& b, const In& in) {
    auto ops = aten::bind(b.src, {"self", "other"});
    auto truth = [&](const Operand& o) {
      if (!o.is_tensor()) return b.scalar(o.value() != 0 ? 1 : 0, DType::boolean);
      NodeId x = in[static_cast<size_t>(o.input)];
      return b.type(x).dtype == DType::boolean ? x : b.call("ne", {x, b.scalar(0, b.type(x).dtype)});
    };
    NodeId x = truth(ops[0]), y = truth(ops[1]);
    return core == "ne" ? b.call("ne", {x, y}) : b.call(core, {x, y});
  };
}

NodeId clamp(Builder& b, const In& in) {
  auto ops = aten::clamp_operands(b.src);
  DType t = out_dtype(b);
  NodeId x = operand(b, in, ops[0], t);
  if (ops[1].input != -2) x = b.call("maximum", {x, operand(b, in, ops[1], t)}, {}, "lo");
  if (ops[2].input != -2) x = b.call("minimum", {x, operand(b, in, ops[2], t)}, {}, "hi");
  if (b.type(x).shape != b.src.type.shape) x = b.call("expand", {x}, {{"shape", b.src.type.shape}});
  return x;
}

NodeId leaky_relu(Builder& b, const In& in) {
  NodeId x = in[0];
  NodeId neg = b.call("mul", {x, b.scalar(b.src.attr_float("negative_slope", 0.01))}, {}, "slope");
  return b.call("where", {b.call("gt", {x, b.scalar(0)}), x, neg});
}

NodeId elu(Builder& b, const In& in) {
  NodeId x = in[0];
  double alpha = b.src.attr_float("alpha", 1), scale = b.src.attr_float("scale", 1), input_scale = b.src.attr_float("input_scale", 1);
  NodeId e = b.call("expm1", {b.call("mul", {x, b.scalar(input_scale)}, {}, "in_scaled")});
  NodeId neg = b.call("mul", {e, b.scalar(alpha * scale)}, {}, "neg_branch");
  NodeId pos = b.call("mul", {x, b.scalar(scale)}, {}, "pos_branch");
  return b.call("where", {b.call("gt", {x, b.scalar(0)}), pos, neg});
}

// full_like / zeros_like / ones_like / empty_like / empty / empty_strided.
NodeId like(Builder& b, const In&) {
  double v = 0;
  if (b.src.op == "aten.ones_like") v = 1;
  if (b.src.op == "aten.full_like") v = aten::bind(b.src, {"self", "fill_value"})[1].value();
  return full_of(b, v, b.src.type, "value");
}

NodeId copy(Builder& b, const In& in) {
  NodeId src = b.cast(in[1], out_dtype(b));
  if (b.type(src).shape == b.src.type.shape) return src;
  return b.call("expand", {src}, {{"shape", b.src.type.shape}});
}

NodeId native_dropout(Builder& b, const In& in) {
  if (b.src.attr_int("result", 0) == 0) return in[0];
  return b.call("eq", {in[0], in[0]}, {}, "mask");  // all true (computed: outputs may not be constant)
}

// Per-channel [C] values reshaped to broadcast over [N, C, *].
NodeId per_channel(Builder& b, NodeId v, int rank, DType t) {
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = b.type(v).numel();
  return b.reshape(b.cast(v, t), s);
}

// Batch norm over dim 1 (see graph/aten_ops.cpp): (x - mean) * rsqrt(var + eps) * w + b.
NodeId batch_norm(Builder& b, const In& in) {
  NodeId x = in[0];
  DType t = b.type(x).dtype;
  int r = b.type(x).rank();
  bool no_training = b.src.op == "aten._native_batch_norm_legit_no_training";
  bool training = !no_training && b.src.attr_bool("training", false);
  size_t k = in.size();
  NodeId w = -1, bias = -1, mean = -1, var = -1;
  if (training) {
    if (k == 3) throw InputError(strcat("node %", b.src.name, " (", b.src.op, "): 3 inputs in training mode are ambiguous "
                                        "(weight/bias or running stats); export with both or neither"));
    if (k >= 5 || k == 3) w = in[1], bias = in[2];
  } else {
    if (k != 3 && k != 5) throw InputError(strcat("node %", b.src.name, " (", b.src.op, "): expects input, [weight, bias,] running_mean, running_var"));
    if (k == 5) w = in[1], bias = in[2];
    mean = per_channel(b, in[k - 2], r, t);
    var = per_channel(b, in[k - 1], r, t);
  }
  if (training) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < r; ++d) dims.push_back(d);
    Attrs red{{"dims", dims}, {"keepdim", true}};
    mean = b.call("mean", {x}, red);
    NodeId xc0 = b.call("sub", {x, mean}, {}, "centered");
    var = b.call("mean", {b.call("mul", {xc0, xc0}, {}, "sq")}, red, "var");
  }
  NodeId rstd = b.call("rsqrt", {b.call("add", {var, b.scalar(b.src.attr_float("eps", 1e-5))}, {}, "var_eps")});
  int64_t result = b.src.attr_int("result", 0);
  Shape c{b.type(x).shape[1]};
  if (result == 1) return b.reshape(mean, c);
  if (result == 2) return b.reshape(rstd, c);
  NodeId y = b.call("mul", {b.call("sub", {x, mean}, {}, "centered"), rstd}, {}, "norm");
  if (w >= 0) y = b.call("mul", {y, per_channel(b, w, r, t)}, {}, "scale");
  if (bias >= 0) y = b.call("add", {y, per_channel(b, bias, r, t)}, {}, "shift");
  return y;
}

NodeId group_norm(Builder& b, const In& in) {
  NodeId x = in[0];
  const Shape xs = b.type(x).shape;
  int64_t groups = b.src.attr_int("group"), n = xs[0];
  NodeId xg = b.reshape(x, {n, groups, b.type(x).numel() / (n * groups)});
  Attrs red{{"dims", std::vector<int64_t>{2}}, {"keepdim", true}};
  NodeId mean = b.call("mean", {xg}, red);
  NodeId xc = b.call("sub", {xg, mean}, {}, "centered");
  NodeId var = b.call("mean", {b.call("mul", {xc, xc}, {}, "sq")}, red, "var");
  NodeId rstd = b.call("rsqrt", {b.call("add", {var, b.scalar(b.src.attr_float("eps", 1e-5))}, {}, "var_eps")});
  int64_t result = b.src.attr_int("result", 0);
  if (result == 1) return b.reshape(mean, {n, groups});
  if (result == 2) return b.reshape(rstd, {n, groups});
  NodeId y = b.reshape(b.call("mul", {xc, rstd}, {}, "norm"), xs);
  int r = b.type(x).rank();
  if (in.size() > 1) y = b.call("mul", {y, per_channel(b, in[1], r, b.type(x).dtype)}, {}, "scale");
  if (in.size() > 2) y = b.call("add", {y, per_channel(b, in[2], r, b.type(x).dtype)}, {}, "shift");
  return y;
}

// repeat: reshape to [1, s0, 1, s1, ...], expand to [r0, s0, r1, s1, ...], merge pairs.
NodeId repeat(Builder& b, const In& in) {
  auto reps = b.src.attr_ints("repeats");
  Shape s = b.type(in[0]).shape;
  s.insert(s.begin(), reps.size() - s.size(), 1);
  Shape split, big;
  for (size_t i = 0; i < reps.size(); ++i) {
    split.insert(split.end(), {1, s[i]});
    big.insert(big.end(), {reps[i], s[i]});
  }
  NodeId x = b.reshape(in[0], split);
  if (big != split) x = b.call("expand", {x}, {{"shape", big}});
  return b.reshape(x, b.src.type.shape);
}

// x with each slice of `dim` repeated r times in place: insert a size-1 dim after it, expand
// it to r, merge.
NodeId interleave(Builder& b, NodeId x, int64_t dim, int64_t r, const Shape& result) {
  if (r == 1) return x;
  Shape s = b.type(x).shape;
  s.insert(s.begin() + dim + 1, 1);
  NodeId y = b.reshape(x, s);
  s[static_cast<size_t>(dim + 1)] = r;
  return b.reshape(b.call("expand", {y}, {{"shape", s}}), result);
}

NodeId repeat_interleave(Builder& b, const In& in) {
  NodeId x = in[0];
  int64_t dim = 0;
  if (b.src.has_attr("dim")) dim = normalize_dim(b.src.attr_int("dim"), b.type(x).rank(), b.src);
  else x = b.reshape(x, {b.type(x).numel()});
  return interleave(b, x, dim, b.src.attr_int("repeats"), b.src.type.shape);
}

// log_softmax = (x - max) - log(sum(exp(x - max))) over dim.
NodeId log_softmax(Builder& b, const In& in) {
  NodeId x = b.cast(in[0], out_dtype(b));
  int64_t d = normalize_dim(b.src.attr_int("dim"), std::max(b.type(x).rank(), 1), b.src);
  Attrs red{{"dims", std::vector<int64_t>{d}}, {"keepdim", true}};
  NodeId shifted = b.call("sub", {x, b.call("amax", {x}, red)}, {}, "shifted");
  NodeId lse = b.call("log", {b.call("sum", {b.call("exp", {shifted})}, red)}, {}, "log_sum");
  return b.call("sub", {shifted, lse});
}

// SDPA (graph/aten_ops.cpp): scores = q k^T * scale (+ mask), causal via two host aranges
// (no index values on the VXE), softmax over the keys, times v.
NodeId sdpa(Builder& b, const In& in) {
  NodeId q = in[0], k = in[1], v = in[2];
  Shape qs = b.type(q).shape, ks = b.type(k).shape;
  size_t r = qs.size();
  int64_t L = qs[r - 2], S = ks[r - 2], E = qs[r - 1];
  if (r >= 3 && qs[r - 3] != ks[r - 3]) {  // grouped-query attention: repeat the kv heads
    int64_t rep = qs[r - 3] / ks[r - 3];
    if (rep * ks[r - 3] != qs[r - 3])
      throw InputError(strcat("node %", b.src.name, ": ", qs[r - 3], " query heads are not a multiple of ", ks[r - 3], " key heads"));
    Shape kr = ks, vr = b.type(v).shape;
    kr[r - 3] = qs[r - 3], vr[r - 3] = qs[r - 3];
    k = interleave(b, k, static_cast<int64_t>(r - 3), rep, kr);
    v = interleave(b, v, static_cast<int64_t>(r - 3), rep, vr);
  }
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[r - 1], perm[r - 2]);
  NodeId scores = b.call("matmul", {q, b.call("permute", {k}, {{"dims", perm}})}, {}, "scores");
  double scale = b.src.has_attr("scale") ? b.src.attr_float("scale", 1) : 1.0 / std::sqrt(static_cast<double>(E));
  DType t = b.type(q).dtype;
  scores = b.call("mul", {scores, b.scalar(scale, t)}, {}, "scaled");
  if (in.size() > 3) {
    NodeId mask = in[3];
    if (b.type(mask).dtype == DType::boolean) scores = b.call("where", {mask, scores, b.scalar(-INFINITY, t)}, {}, "masked");
    else scores = b.call("add", {scores, b.cast(mask, t)}, {}, "biased");
  }
  if (b.src.attr_bool("is_causal", false)) {
    NodeId rows = b.reshape(b.g.add_call("aten.arange", {}, {{"end", L}}, b.src.name + "_rows"), {L, 1});
    NodeId cols = b.reshape(b.g.add_call("aten.arange", {}, {{"end", S}}, b.src.name + "_cols"), {1, S});
    scores = b.call("where", {b.call("ge", {rows, cols}, {}, "causal"), scores, b.scalar(-INFINITY, t)}, {}, "causal_masked");
  }
  if (b.src.attr_int("result", 0) == 1) {  // logsumexp over the keys, in f32
    NodeId s32 = b.cast(scores, DType::f32);
    Attrs red{{"dims", std::vector<int64_t>{static_cast<int64_t>(r - 1)}}, {"keepdim", true}};
    NodeId m = b.call("amax", {s32}, red);
    NodeId lse = b.call("add", {m, b.call("log", {b.call("sum", {b.call("exp", {b.call("sub", {s32, m})})}, red)})}, {}, "lse");
    return b.reshape(lse, b.src.type.shape);
  }
  NodeId p = b.call("softmax", {scores}, {{"dim", static_cast<int64_t>(r - 1)}});
  return b.call("matmul", {p, v}, {}, "out");
}

// div with rounding_mode "floor" / "trunc": the quotient in floating point, rounded.
NodeId div(Builder& b, const In& in) {
  std::string mode = b.src.attr_str("rounding_mode", "");
  if (mode.empty()) return arith("div")(b, in);
  DType t = out_dtype(b), ct = is_floating(t) ? t : DType::f32;
  auto ops = aten::bind(b.src, {"self", "other"});
  NodeId q = b.call("div", {b.cast(operand(b, in, ops[0], t), ct), b.cast(operand(b, in, ops[1], t), ct)});
  return b.cast(b.call(mode == "floor" ? "floor" : "trunc", {q}), t);
}

// ---- reductions ---------------------------------------------------------------------------

Attrs reduce_attrs(const std::vector<int64_t>& dims, bool keepdim) { return {{"dims", dims}, {"keepdim", keepdim}}; }

Expander reduction(const std::string& core) {
  return [core](Builder& b, const In& in) {
    auto dims = aten::reduce_dims(b.src, "dim", b.type(in[0]).rank());
    Attrs a = reduce_attrs(dims, b.src.attr_bool("keepdim", false));
    DType t = out_dtype(b);
    if (is_floating(t)) return b.call(core, {b.cast(in[0], t)}, a);
    // Integer sums run in f32 (exact below 2^24, like every integer the host tensors hold).
    return b.cast(b.call(core, {b.cast(in[0], DType::f32)}, a), t);
  };
}

// any = amax(x != 0), all = amin(x != 0), reduced in f32 (0/1) and converted back to bool.
Expander any_all(const std::string& core) {
  return [core](Builder& b, const In& in) {
    NodeId nz = b.call("ne", {in[0], b.scalar(0, b.type(in[0]).dtype)}, {}, "nonzero");
    auto dims = aten::reduce_dims(b.src, "dim", b.type(in[0]).rank());
    NodeId r = b.call(core, {b.cast(nz, DType::f32)}, reduce_attrs(dims, b.src.attr_bool("keepdim", false)));
    return b.cast(r, DType::boolean);
  };
}

// var = sum((x - mean)^2) / (N - correction); correction defaults to 1 (unbiased).
NodeId var(Builder& b, const In& in) {
  NodeId x = b.cast(in[0], out_dtype(b));
  const Shape& s = b.type(x).shape;
  auto dims = aten::reduce_dims(b.src, "dim", b.type(x).rank());
  int64_t n = 1;
  for (auto d : dims) n *= s[static_cast<size_t>(d)];
  double correction = b.src.has_attr("correction")  ? b.src.attr_float("correction", 1)
                      : b.src.has_attr("unbiased") ? (b.src.attr_bool("unbiased", true) ? 1 : 0)
                                                   : 1;
  NodeId mean = b.call("mean", {x}, reduce_attrs(dims, true));
  NodeId xc = b.call("sub", {x, mean}, {}, "centered");
  NodeId ss = b.call("sum", {b.call("mul", {xc, xc}, {}, "sq")}, reduce_attrs(dims, b.src.attr_bool("keepdim", false)));
  return b.call("div", {ss, b.scalar(std::max(static_cast<double>(n) - correction, 0.0))});
}

// ---- shapes -------------------------------------------------------------------------------

NodeId to_shape(Builder& b, const In& in) { return b.reshape(in[0], b.src.type.shape); }

NodeId permute_to(Builder& b, NodeId x, std::vector<int64_t> dims) {
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return b.call("permute", {x}, {{"dims", dims}});
}

NodeId permute(Builder& b, const In& in) {
  int r = b.type(in[0]).rank();
  std::vector<int64_t> dims;
  for (auto d : b.src.attr_ints("dims")) dims.push_back(normalize_dim(d, r, b.src));
  return permute_to(b, in[0], dims);
}

NodeId transpose(Builder& b, const In& in) {
  int r = b.type(in[0]).rank();
  auto dims = iota_dims(0, r);
  if (b.src.op == "aten.t") {
    if (r == 2) std::swap(dims[0], dims[1]);
  } else if (r > 0) {
    std::swap(dims[static_cast<size_t>(normalize_dim(b.src.attr_int("dim0"), r, b.src))],
              dims[static_cast<size_t>(normalize_dim(b.src.attr_int("dim1"), r, b.src))]);
  }
  return permute_to(b, in[0], dims);
}

NodeId expand(Builder& b, const In& in) {
  if (b.type(in[0]).shape == b.src.type.shape) return in[0];
  return b.call("expand", {in[0]}, {{"shape", b.src.type.shape}});
}

// x[start:end] along dim (canonical attributes); the input itself for the full range.
NodeId slice_of(Builder& b, NodeId x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start == 0 && step == 1 && end == b.type(x).shape[static_cast<size_t>(dim)]) return x;
  return b.call("slice", {x}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

NodeId slice(Builder& b, const In& in) {
  auto d = normalize_dim(b.src.attr_int("dim", 0), b.type(in[0]).rank(), b.src);
  SliceRange r = slice_range(b.src, b.type(in[0]).shape[static_cast<size_t>(d)]);
  return slice_of(b, in[0], d, r.start, r.end, r.step);
}

// select / unbind: one index of `dim`, which is dropped.
NodeId select_index(Builder& b, NodeId x, int64_t index) {
  auto d = normalize_dim(b.src.attr_int("dim", 0), b.type(x).rank(), b.src);
  int64_t size = b.type(x).shape[static_cast<size_t>(d)];
  if (index < 0) index += size;
  return b.reshape(slice_of(b, x, d, index, index + 1, 1), b.src.type.shape);
}

NodeId select(Builder& b, const In& in) { return select_index(b, in[0], b.src.attr_int("index")); }

NodeId unbind(Builder& b, const In& in) { return select_index(b, in[0], b.src.attr_int("result", 0)); }

// split / split_with_sizes: piece `result`.
NodeId split(Builder& b, const In& in) {
  auto d = normalize_dim(b.src.attr_int("dim", 0), b.type(in[0]).rank(), b.src);
  int64_t k = b.src.attr_int("result", 0);
  int64_t start = 0;
  if (b.src.op == "aten.split") {
    start = k * b.src.attr_int("split_size");
  } else {
    auto sizes = b.src.attr_ints("split_sizes");
    for (int64_t i = 0; i < k; ++i) start += sizes[static_cast<size_t>(i)];
  }
  int64_t len = b.src.type.shape[static_cast<size_t>(d)];
  return slice_of(b, in[0], d, start, start + len, 1);
}

// self with [start, end) of `dim` replaced by src = cat(self[:start], src, self[end:]).
NodeId scatter(Builder& b, const In& in) {
  NodeId self = in[0];
  auto d = normalize_dim(b.src.attr_int("dim", 0), b.type(self).rank(), b.src);
  int64_t size = b.type(self).shape[static_cast<size_t>(d)];
  int64_t start, end;
  NodeId src = in[1];
  if (b.src.op == "aten.select_scatter") {
    start = b.src.attr_int("index");
    if (start < 0) start += size;
    end = start + 1;
    Shape s = b.type(self).shape;
    s[static_cast<size_t>(d)] = 1;
    src = b.reshape(src, s);
  } else {
    SliceRange r = slice_range(b.src, size);
    start = r.start;
    end = std::max(r.start, r.end);
  }
  std::vector<NodeId> parts;
  if (start > 0) parts.push_back(slice_of(b, self, d, 0, start, 1));
  if (end > start) parts.push_back(src);
  if (end < size) parts.push_back(slice_of(b, self, d, end, size, 1));
  if (parts.size() == 1) return parts[0];
  return b.call("cat", parts, {{"dim", d}});
}

NodeId cat(Builder& b, const In& in) {
  std::vector<NodeId> parts;
  for (NodeId x : in) parts.push_back(b.cast(x, out_dtype(b)));
  if (parts.size() == 1) return parts[0];
  return b.call("cat", parts, {{"dim", normalize_dim(b.src.attr_int("dim", 0), b.src.type.rank(), b.src)}});
}

// stack = cat of the inputs each reshaped with a size-1 dim at `dim`.
NodeId stack(Builder& b, const In& in) {
  auto d = normalize_dim(b.src.attr_int("dim", 0), b.src.type.rank(), b.src);
  std::vector<NodeId> parts;
  for (NodeId x : in) {
    Shape s = b.type(x).shape;
    s.insert(s.begin() + d, 1);
    parts.push_back(b.reshape(b.cast(x, out_dtype(b)), s));
  }
  if (parts.size() == 1) return parts[0];
  return b.call("cat", parts, {{"dim", d}});
}

NodeId embedding(Builder& b, const In& in) { return b.call("embedding", {in[0], in[1]}); }

// ---- matmul family ------------------------------------------------------------------------

NodeId matmul_of(Builder& b, NodeId x, NodeId y) {
  Shape xs = b.type(x).shape, ys = b.type(y).shape;
  // The core form needs a rank >= 2 second operand, and a rank-1 first one only with a 2-D
  // second; the other torch.matmul cases go through [1, K] / [K, 1] and a reshape back.
  if (ys.size() == 1) y = b.reshape(y, {ys[0], 1});
  if (xs.size() == 1 && b.type(y).rank() != 2) x = b.reshape(x, {1, xs[0]});
  return b.reshape(b.call("matmul", {x, y}), b.src.type.shape);
}

NodeId mm(Builder& b, const In& in) { return matmul_of(b, in[0], in[1]); }

// beta * self + alpha * (m1 @ m2); beta == 0 ignores self (even NaNs in it), as torch does.
NodeId add_mm(Builder& b, const In& in) {
  NodeId p = matmul_of(b, in[1], in[2]);
  double alpha = b.src.attr_float("alpha", 1), beta = b.src.attr_float("beta", 1);
  if (alpha != 1) p = b.call("mul", {p, b.scalar(alpha)}, {}, "alpha");
  if (beta == 0) return p;
  NodeId s = in[0];
  if (beta != 1) s = b.call("mul", {s, b.scalar(beta)}, {}, "beta");
  return b.call("add", {s, p});
}

NodeId linear(Builder& b, const In& in) {
  NodeId y = b.call("matmul", {in[0], permute_to(b, in[1], {1, 0})});
  return in.size() > 2 ? b.call("add", {y, in[2]}, {}, "bias") : y;
}

// ---- normalisation, softmax ---------------------------------------------------------------

// (x - mean) * rsqrt(var + eps) * weight + bias over the trailing normalized_shape dims
// (biased variance); native_layer_norm's results 1 and 2 are mean and rstd.
NodeId layer_norm(Builder& b, const In& in) {
  NodeId x = in[0];
  int r = b.type(x).rank();
  auto k = static_cast<int64_t>(b.src.attr_ints("normalized_shape").size());
  Attrs red{{"dims", iota_dims(r - k, r)}, {"keepdim", true}};
  NodeId mean = b.call("mean", {x}, red);
  int64_t result = b.src.op == "aten.native_layer_norm" ? b.src.attr_int("result", 0) : 0;
  if (result == 1) return mean;
  NodeId xc = b.call("sub", {x, mean}, {}, "centered");
  NodeId var = b.call("mean", {b.call("mul", {xc, xc}, {}, "sq")}, red, "var");
  NodeId rstd = b.call("rsqrt", {b.call("add", {var, b.scalar(b.src.attr_float("eps", 1e-5))}, {}, "var_eps")});
  if (result == 2) return rstd;
  NodeId y = b.call("mul", {xc, rstd}, {}, "norm");
  if (in.size() > 1) y = b.call("mul", {y, in[1]}, {}, "scale");
  if (in.size() > 2) y = b.call("add", {y, in[2]}, {}, "shift");
  return y;
}

NodeId softmax(Builder& b, const In& in) {
  NodeId x = b.cast(in[0], out_dtype(b));
  return b.call("softmax", {x}, {{"dim", normalize_dim(b.src.attr_int("dim"), std::max(b.type(x).rank(), 1), b.src)}});
}

// ---- constants ----------------------------------------------------------------------------

NodeId full(Builder& b, const In&) {
  double v = b.src.op == "aten.ones" ? 1.0 : 0.0;
  if (b.src.op == "aten.full") v = aten::bind(b.src, {"fill_value"})[0].value();
  if (b.src.op == "aten.scalar_tensor") v = aten::bind(b.src, {"s"})[0].value();
  return b.g.add_call("full", {},
                      {{"value", v}, {"shape", b.src.type.shape}, {"dtype", std::string(dtype_name(out_dtype(b)))}},
                      b.src.name);
}

// The table in groups (one function each), merged into one map.
using ExpanderTable = std::map<std::string, Expander>;

// pointwise
void add_pointwise(ExpanderTable& t) {
  t.insert({
        {"aten.add", arith("add")},
        {"aten.sub", arith("sub")},
        {"aten.rsub", arith("sub", true)},
        {"aten.mul", arith("mul")},
        {"aten.div", div},
        {"aten.maximum", arith("maximum")},
        {"aten.minimum", arith("minimum")},
        {"aten.pow", pow},
        {"aten.eq", compare("eq")},
        {"aten.ne", compare("ne")},
        {"aten.lt", compare("lt")},
        {"aten.le", compare("le")},
        {"aten.gt", compare("gt")},
        {"aten.ge", compare("ge")},
        {"aten.where", where},
        {"aten.masked_fill", masked_fill},
        {"aten.bitwise_not", bitwise_not},
        {"aten.logical_not", logical_not},
        {"aten.fill", fill},
        {"aten.neg", neg},
        {"aten.abs", abs},
        {"aten.relu", relu},
        {"aten.exp", unary("exp")},
        {"aten.log", unary("log")},
        {"aten.sqrt", unary("sqrt")},
        {"aten.rsqrt", unary("rsqrt")},
        {"aten.reciprocal", unary("reciprocal")},
        {"aten.erf", unary("erf")},
        {"aten.tanh", unary("tanh")},
        {"aten.sin", unary("sin")},
        {"aten.cos", unary("cos")},
        {"aten.sigmoid", unary("sigmoid")},
        {"aten.gelu", gelu},
        {"aten.silu", silu},
        {"aten.tan", unary("tan")},
        {"aten.asin", unary("asin")},
        {"aten.acos", unary("acos")},
        {"aten.atan", unary("atan")},
        {"aten.sinh", unary("sinh")},
        {"aten.cosh", unary("cosh")},
        {"aten.asinh", unary("asinh")},
        {"aten.acosh", unary("acosh")},
        {"aten.atanh", unary("atanh")},
        {"aten.expm1", unary("expm1")},
        {"aten.log1p", unary("log1p")},
        {"aten.log2", unary("log2")},
        {"aten.log10", unary("log10")},
        {"aten.floor", rounding("floor")},
        {"aten.ceil", rounding("ceil")},
        {"aten.round", rounding("round")},
        {"aten.trunc", rounding("trunc")},
        {"aten.sign", float_op("sign", {"self"})},
        {"aten.isnan", is_test("is_nan")},
        {"aten.isinf", is_test("is_inf")},
        {"aten.atan2", float_op("atan2", {"self", "other"})},
        {"aten.fmod", float_op("fmod", {"self", "other"})},
        {"aten.remainder", float_op("remainder", {"self", "other"})},
        {"aten.bitwise_and", bitwise("bitwise_and")},
        {"aten.bitwise_or", bitwise("bitwise_or")},
        {"aten.bitwise_xor", bitwise("bitwise_xor")},
        {"aten.logical_and", logical("bitwise_and")},
        {"aten.logical_or", logical("bitwise_or")},
        {"aten.logical_xor", logical("ne")},
        {"aten.clamp", clamp},
        {"aten.clamp_min", clamp},
        {"aten.clamp_max", clamp},
        {"aten.hardtanh", clamp},
        {"aten.leaky_relu", leaky_relu},
        {"aten.elu", elu},
        {"aten.full_like", like},
        {"aten.zeros_like", like},
        {"aten.ones_like", like},
        {"aten.empty_like", like},
        {"aten.empty", like},
        {"aten.empty_strided", like},
        {"aten.copy", copy},
        {"aten.native_dropout", native_dropout},
        {"aten._to_copy", to_copy},
        {"aten.clone", same},
        {"aten.alias", same},
        {"aten.detach", same},
        {"aten.lift_fresh_copy", same},
        {"aten.dropout", same},
  });
}

// reductions
void add_reductions(ExpanderTable& t) {
  t.insert({
        {"aten.sum", reduction("sum")},
        {"aten.mean", reduction("mean")},
        {"aten.amax", reduction("amax")},
        {"aten.amin", reduction("amin")},
        {"aten.any", any_all("amax")},
        {"aten.all", any_all("amin")},
        {"aten.var", var},
  });
}

// shapes and indexing
void add_shapes(ExpanderTable& t) {
  t.insert({
        {"aten.view", to_shape},
        {"aten._unsafe_view", to_shape},
        {"aten.view_copy", to_shape},
        {"aten._reshape_alias", to_shape},
        {"aten.reshape", to_shape},
        {"aten.unsqueeze", to_shape},
        {"aten.squeeze", to_shape},
        {"aten.permute", permute},
        {"aten.transpose", transpose},
        {"aten.t", transpose},
        {"aten.expand", expand},
        {"aten.slice", slice},
        {"aten.select", select},
        {"aten.cat", cat},
        {"aten.slice_scatter", scatter},
        {"aten.select_scatter", scatter},
        {"aten.stack", stack},
        {"aten.split", split},
        {"aten.split_with_sizes", split},
        {"aten.unbind", unbind},
        {"aten.embedding", embedding},
        {"aten.repeat", repeat},
        {"aten.repeat_interleave", repeat_interleave},
  });
}

// matmul family
void add_matmuls(ExpanderTable& t) {
  t.insert({
        {"aten.mm", mm},
        {"aten.mv", mm},
        {"aten.bmm", mm},
        {"aten.matmul", mm},
        {"aten.addmm", add_mm},
        {"aten.baddbmm", add_mm},
        {"aten.linear", linear},
  });
}

// normalisation, softmax
void add_normalisations(ExpanderTable& t) {
  t.insert({
        {"aten.native_layer_norm", layer_norm},
        {"aten.layer_norm", layer_norm},
        {"aten._softmax", softmax},
        {"aten.softmax", softmax},
        {"aten._log_softmax", log_softmax},
        {"aten.log_softmax", log_softmax},
        {"aten._native_batch_norm_legit_no_training", batch_norm},
        {"aten._native_batch_norm_legit", batch_norm},
        {"aten.native_group_norm", group_norm},
        {"aten.scaled_dot_product_attention", sdpa},
        {"aten._scaled_dot_product_flash_attention_for_cpu", sdpa},
        {"aten._scaled_dot_product_efficient_attention", sdpa},
        {"aten._scaled_dot_product_flash_attention", sdpa},
        {"aten._scaled_dot_product_cudnn_attention", sdpa},
  });
}

// constants
void add_constants(ExpanderTable& t) {
  t.insert({
        {"aten.full", full},
        {"aten.scalar_tensor", full},
        {"aten.ones", full},
        {"aten.zeros", full},
  });
}

}  // namespace

const std::map<std::string, Expander>& aten_decompositions() {
  static const ExpanderTable table = [] {
    ExpanderTable t;
    add_pointwise(t);
    add_reductions(t);
    add_shapes(t);
    add_matmuls(t);
    add_normalisations(t);
    add_constants(t);
    return t;
  }();
  return table;
}

}  // namespace lpu
