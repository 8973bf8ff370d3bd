// The host op table (see host_ops.h): per ATen op its arity, type inference and semantics.
// Semantics follow PyTorch's eager CPU kernels on the fp32 host values (integers exact below
// 2^24). Ties in sort/topk keep the lower index first (a stable sort).
#include "ref/host_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "graph/aten.h"
#include "graph/ops.h"
#include "ops/reduction.h"
#include "support/error.h"

namespace lpu::host_ops {
namespace {

using Ins = std::vector<const Tensor*>;
using Infer = TensorType (*)(const Graph&, const Node&);
using Eval = Tensor (*)(const Node&, const Ins&);

[[noreturn]] void bad(const Node& n, const std::string& msg) {
  throw InputError(strcat("node %", n.name, " (", n.op, "): ", msg));
}

const TensorType& in(const Graph& g, const Node& n, size_t i) { return g.node(n.inputs.at(i)).type; }

size_t dim_of(const Node& n, const char* key, int64_t dflt, int rank) {
  return static_cast<size_t>(normalize_dim(n.attr_int(key, dflt), std::max(rank, 1), n));
}

// An element index of `t` from a float value, checked against [0, size) (negatives wrap).
int64_t index_value(const Node& n, float v, int64_t size) {
  auto i = static_cast<int64_t>(v);
  if (i < 0) i += size;
  if (i < 0 || i >= size) bad(n, strcat("index ", v, " is out of range for a dimension of size ", size));
  return i;
}

// Visits every multi-index of `shape` in row-major order.
template <typename F>
void each(const Shape& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t total = numel(shape);
  for (int64_t lin = 0; lin < total; ++lin) {
    f(lin, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// Calls f(base, stride, size) for each 1-D line of `s` along dim d.
template <typename F>
void each_line(const Shape& s, size_t d, F f) {
  auto st = contiguous_strides(s);
  Shape outer = s;
  outer[d] = 1;
  each(outer, [&](int64_t, const std::vector<int64_t>& idx) { f(offset(idx, st), st[d], s[d]); });
}

// ---- sorting and selection ------------------------------------------------------------------

TensorType values_or_indices(const Graph& g, const Node& n, Shape s) {
  TensorType t{in(g, n, 0).dtype, std::move(s)};
  if (aten::result_index(n, 2) == 1) t.dtype = DType::i64;
  return t;
}

TensorType sort_type(const Graph& g, const Node& n) {
  (void)dim_of(n, "dim", -1, in(g, n, 0).rank());
  return values_or_indices(g, n, in(g, n, 0).shape);
}

TensorType topk_type(const Graph& g, const Node& n) {
  Shape s = in(g, n, 0).shape;
  if (s.empty()) s = {1};
  size_t d = dim_of(n, "dim", -1, in(g, n, 0).rank());
  int64_t k = n.attr_int("k");
  if (k < 1 || k > s[d]) bad(n, strcat("k = ", k, " out of range for size ", s[d]));
  s[d] = k;
  if (in(g, n, 0).rank() == 0) s.clear();
  return values_or_indices(g, n, s);
}

// Sorted order of one line (stable; descending puts larger first, NaN as largest).
std::vector<int64_t> order(const float* x, int64_t stride, int64_t size, bool descending) {
  std::vector<int64_t> o(static_cast<size_t>(size));
  std::iota(o.begin(), o.end(), 0);
  auto key = [&](int64_t i) { return x[i * stride]; };
  std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
    float va = key(a), vb = key(b);
    if (std::isnan(va) || std::isnan(vb)) return descending ? (std::isnan(va) && !std::isnan(vb)) : (!std::isnan(va) && std::isnan(vb));
    return descending ? va > vb : va < vb;
  });
  return o;
}

// sort and topk: the first `k` of each line's order, values (result 0) or indices (result 1).
Tensor select_sorted(const Node& n, const Tensor& x, int64_t k, bool descending) {
  Tensor out(n.type);
  if (x.type.rank() == 0) {
    out.data[0] = n.attr_int("result", 0) == 1 ? 0.0f : x.data[0];
    return out;
  }
  size_t d = dim_of(n, "dim", -1, x.type.rank());
  bool want_index = n.attr_int("result", 0) == 1;
  Shape os = x.type.shape;
  os[d] = k;
  auto ost = contiguous_strides(os);
  auto xst = contiguous_strides(x.type.shape);
  Shape outer = x.type.shape;
  outer[d] = 1;
  each(outer, [&](int64_t, const std::vector<int64_t>& idx) {
    const float* line = x.data.data() + offset(idx, xst);
    auto o = order(line, xst[d], x.type.shape[d], descending);
    int64_t base = offset(idx, ost);
    for (int64_t j = 0; j < k; ++j)
      out.data[static_cast<size_t>(base + j * ost[d])] =
          want_index ? static_cast<float>(o[static_cast<size_t>(j)]) : line[o[static_cast<size_t>(j)] * xst[d]];
  });
  return out;
}

Tensor sort(const Node& n, const Ins& a) {
  int64_t size = a[0]->type.rank() ? a[0]->type.shape[dim_of(n, "dim", -1, a[0]->type.rank())] : 1;
  return select_sorted(n, *a[0], size, n.attr_bool("descending", false));
}

Tensor topk(const Node& n, const Ins& a) { return select_sorted(n, *a[0], n.attr_int("k"), n.attr_bool("largest", true)); }

// argmax / argmin (dim optional: over the flattened tensor), max / min with a dim (values or
// indices) or without (the value). The first extreme wins; NaN counts as the extreme.
TensorType arg_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  bool has_dim = n.has_attr("dim");
  bool keep = n.attr_bool("keepdim", false);
  Shape s;
  if (has_dim) {
    s = x.shape;
    size_t d = dim_of(n, "dim", 0, x.rank());
    if (!s.empty()) {
      if (keep) s[d] = 1;
      else s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    }
  } else if (keep) {
    s = Shape(x.shape.size(), 1);
  }
  bool is_arg = n.op == "aten.argmax" || n.op == "aten.argmin";
  if (is_arg) return {DType::i64, s};
  if (!has_dim) return {x.dtype, {}};
  return values_or_indices(g, n, s);
}

Tensor arg_extreme(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  bool is_max = n.op == "aten.argmax" || n.op == "aten.max";
  bool want_index = n.op == "aten.argmax" || n.op == "aten.argmin" || n.attr_int("result", 0) == 1;
  Tensor out(n.type);
  auto better = [is_max](float v, float best) {
    if (std::isnan(best)) return false;
    if (std::isnan(v)) return true;
    return is_max ? v > best : v < best;
  };
  auto reduce_line = [&](const float* p, int64_t stride, int64_t size, float& val, int64_t& arg) {
    val = p[0];
    arg = 0;
    for (int64_t i = 1; i < size; ++i)
      if (better(p[i * stride], val)) val = p[i * stride], arg = i;
  };
  if (!n.has_attr("dim") || x.type.rank() == 0) {
    float v;
    int64_t i;
    reduce_line(x.data.data(), 1, x.numel(), v, i);
    out.data[0] = want_index ? static_cast<float>(i) : v;
    return out;
  }
  size_t d = dim_of(n, "dim", 0, x.type.rank());
  size_t k = 0;
  each_line(x.type.shape, d, [&](int64_t base, int64_t stride, int64_t size) {
    float v;
    int64_t i;
    reduce_line(x.data.data() + base, stride, size, v, i);
    out.data[k++] = want_index ? static_cast<float>(i) : v;
  });
  return out;
}

// ---- histogram --------------------------------------------------------------------------------

// torch.histc(x, bins, min, max): counts in `bins` equal-width bins over [min, max] (min == max:
// the data's own range, widened by 1 each way when that is one value too); a value equal to max
// falls in the last bin; values outside the range and NaN are not counted. HF MoE layers count
// the tokens routed to each expert with it.
TensorType histc_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  if (!is_floating(x.dtype)) bad(n, strcat("needs a floating input, got ", dtype_name(x.dtype)));
  int64_t bins = n.attr_int("bins", 100);
  if (bins < 1 || bins > (int64_t{1} << 24)) bad(n, strcat("bins = ", bins, " out of range 1..2^24"));
  double lo = n.attr_float("min", 0), hi = n.attr_float("max", 0);
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) bad(n, strcat("range [", lo, ", ", hi, "] is not a finite range"));
  return {x.dtype, {bins}};
}

Tensor histc(const Node& n, const Ins& a) {
  Tensor out(n.type);
  const auto bins = static_cast<int64_t>(out.data.size());
  double lo = n.attr_float("min", 0), hi = n.attr_float("max", 0);
  if (lo == hi) {
    bool any = false;
    for (float v : a[0]->data)
      if (!std::isnan(v)) {
        lo = any ? std::min(lo, static_cast<double>(v)) : v;
        hi = any ? std::max(hi, static_cast<double>(v)) : v;
        any = true;
      }
    if (lo == hi) lo -= 1, hi += 1;
  }
  for (float v : a[0]->data) {
    if (std::isnan(v) || v < lo || v > hi) continue;
    auto b = static_cast<int64_t>((v - lo) * static_cast<double>(bins) / (hi - lo));
    out.data[static_cast<size_t>(std::min(b, bins - 1))] += 1;
  }
  return out;
}

// ---- scans and products ---------------------------------------------------------------------

TensorType scan_type(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  (void)dim_of(n, "dim", 0, t.rank());
  if (auto d = aten::dtype_attr(n)) t.dtype = *d;
  else if (!is_floating(t.dtype)) t.dtype = DType::i64;
  return t;
}

Tensor cumulative(const Node& n, const Ins& a) {
  Tensor out(n.type);
  out.data = a[0]->data;
  if (a[0]->type.rank() == 0) return out;
  bool prod = n.op == "aten.cumprod";
  each_line(a[0]->type.shape, dim_of(n, "dim", 0, a[0]->type.rank()), [&](int64_t base, int64_t stride, int64_t size) {
    double acc = prod ? 1.0 : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      float& v = out.data[static_cast<size_t>(base + i * stride)];
      acc = prod ? acc * v : acc + v;
      v = round_to_dtype(static_cast<float>(acc), n.type.dtype);
    }
  });
  return out;
}

TensorType prod_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto dims = aten::reduce_dims(n, "dim", x.rank());
  TensorType t{x.dtype, aten::reduced_shape(x.shape, dims, n.attr_bool("keepdim", false))};
  if (auto d = aten::dtype_attr(n)) t.dtype = *d;
  else if (!is_floating(t.dtype)) t.dtype = DType::i64;
  return t;
}

Tensor prod(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  Tensor out(n.type);
  std::fill(out.data.begin(), out.data.end(), 1.0f);
  auto dims = aten::reduce_dims(n, "dim", x.type.rank());
  Shape kept = x.type.shape;
  for (auto d : dims) kept[static_cast<size_t>(d)] = 1;
  auto kst = contiguous_strides(kept);
  for (auto d : dims) kst[static_cast<size_t>(d)] = 0;
  std::vector<double> acc(out.data.size(), 1.0);
  each(x.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    acc[static_cast<size_t>(offset(idx, kst))] *= x.data[static_cast<size_t>(lin)];
  });
  for (size_t i = 0; i < acc.size(); ++i) out.data[i] = static_cast<float>(acc[i]);
  return out;
}

// ---- gather / scatter / indexing ------------------------------------------------------------

void check_index_dtype(const Graph& g, const Node& n, size_t i) {
  DType t = in(g, n, i).dtype;
  if (t != DType::i64 && t != DType::i32) bad(n, strcat("input ", i, " (an index) must be i64 or i32, got ", dtype_name(t)));
}

TensorType gather_type(const Graph& g, const Node& n) {
  check_index_dtype(g, n, 1);
  (void)dim_of(n, "dim", 0, in(g, n, 0).rank());
  if (in(g, n, 1).rank() != std::max(in(g, n, 0).rank(), 1) && in(g, n, 0).rank() != 0)
    bad(n, "index must have the rank of self");
  return {in(g, n, 0).dtype, in(g, n, 1).shape};
}

Tensor gather(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  const Tensor& ix = *a[1];
  Tensor out(n.type);
  if (x.type.rank() == 0) {
    for (auto& v : out.data) v = x.data[0];
    return out;
  }
  size_t d = dim_of(n, "dim", 0, x.type.rank());
  auto xst = contiguous_strides(x.type.shape);
  each(ix.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    idx[d] = index_value(n, ix.data[static_cast<size_t>(lin)], x.type.shape[d]);
    out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(offset(idx, xst))];
  });
  return out;
}

// scatter (src or value, optional reduce add/multiply), scatter_add, scatter_reduce.
TensorType scatter_type(const Graph& g, const Node& n) {
  check_index_dtype(g, n, 1);
  (void)dim_of(n, "dim", 0, in(g, n, 0).rank());
  return in(g, n, 0);
}

// One element into scatter_reduce's running value `cur` (a mean sums; the caller divides).
void scatter_reduce_step(const Node& n, const std::string& reduce, bool known, ReductionType type, double& cur,
                         float v) {
  switch (known ? type : ReductionType::argmax) {
    case ReductionType::sum:
    case ReductionType::mean: cur += v; return;
    case ReductionType::prod: cur *= v; return;
    case ReductionType::max: cur = std::max<double>(cur, v); return;
    case ReductionType::min: cur = std::min<double>(cur, v); return;
    case ReductionType::argmax:
    case ReductionType::var: break;
  }
  bad(n, strcat("unknown reduce \"", reduce, "\" (sum, prod, mean, amax, amin)"));
}

Tensor scatter(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  const Tensor& ix = *a[1];
  const Tensor* src = a.size() > 2 ? a[2] : nullptr;
  double value = src ? 0.0 : n.attr_float("value", 0.0);
  std::string reduce = n.attr_str("reduce", n.op == "aten.scatter_add" ? "sum" : "");
  if (reduce == "add") reduce = "sum";
  if (reduce == "multiply") reduce = "prod";
  // torch spells the reduction as it spells the reduction functions (ops/reduction.h).
  ReductionType type = ReductionType::prod;
  const bool known = parse_torch_reduction(reduce, type);
  bool include_self = n.attr_bool("include_self", true);
  Tensor out(n.type);
  out.data = x.data;
  size_t d = x.type.rank() ? dim_of(n, "dim", 0, x.type.rank()) : 0;
  auto xst = contiguous_strides(x.type.shape);
  auto sst = src ? contiguous_strides(src->type.shape) : std::vector<int64_t>{};
  std::map<int64_t, std::pair<double, int64_t>> acc;  // scatter_reduce: target -> (value, count)
  each(ix.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    float v = src ? src->data[static_cast<size_t>(offset(idx, sst))] : static_cast<float>(value);
    if (x.type.rank()) idx[d] = index_value(n, ix.data[static_cast<size_t>(lin)], x.type.shape[d]);
    int64_t o = x.type.rank() ? offset(idx, xst) : 0;
    float& t = out.data[static_cast<size_t>(o)];
    if (reduce.empty()) {
      t = v;
    } else if (n.op != "aten.scatter_reduce") {
      t = known && type == ReductionType::sum ? t + v : t * v;
    } else {
      auto it = acc.find(o);
      if (it == acc.end()) it = acc.emplace(o, std::make_pair(include_self ? double(t) : std::nan(""), include_self ? 1 : 0)).first;
      auto& [cur, count] = it->second;
      if (std::isnan(cur) && count == 0) cur = v;
      else scatter_reduce_step(n, reduce, known, type, cur, v);
      ++count;
    }
  });
  for (auto& [o, vc] : acc) {
    const bool mean = type == ReductionType::mean;
    double r = mean ? vc.first / static_cast<double>(std::max<int64_t>(vc.second, 1)) : vc.first;
    if (mean && !is_floating(n.type.dtype)) r = std::floor(r);
    out.data[static_cast<size_t>(o)] = static_cast<float>(r);
  }
  return out;
}

TensorType index_select_type(const Graph& g, const Node& n) {
  check_index_dtype(g, n, 1);
  TensorType t = in(g, n, 0);
  if (t.rank() == 0) return t;
  t.shape[dim_of(n, "dim", 0, t.rank())] = in(g, n, 1).numel();
  return t;
}

Tensor index_select(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  Tensor out(n.type);
  if (x.type.rank() == 0) {
    for (auto& v : out.data) v = x.data[0];
    return out;
  }
  size_t d = dim_of(n, "dim", 0, x.type.rank());
  auto xst = contiguous_strides(x.type.shape);
  each(n.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    idx[d] = index_value(n, a[1]->data[static_cast<size_t>(idx[d])], x.type.shape[d]);
    out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(offset(idx, xst))];
  });
  return out;
}

// index_add / index_copy: self with slices `index[i]` of `dim` combined with source's slice i.
TensorType index_update_type(const Graph& g, const Node& n) {
  check_index_dtype(g, n, 1);
  return in(g, n, 0);
}

Tensor index_update(const Node& n, const Ins& a) {
  const Tensor& x = *a[0];
  const Tensor& src = *a[2];
  Tensor out(n.type);
  out.data = x.data;
  size_t d = x.type.rank() ? dim_of(n, "dim", 0, x.type.rank()) : 0;
  auto xst = contiguous_strides(x.type.shape);
  bool add = n.op == "aten.index_add";
  auto alpha = static_cast<float>(n.attr_float("alpha", 1.0));
  each(src.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    if (x.type.rank()) idx[d] = index_value(n, a[1]->data[static_cast<size_t>(idx[d])], x.type.shape[d]);
    float& t = out.data[static_cast<size_t>(x.type.rank() ? offset(idx, xst) : 0)];
    float v = src.data[static_cast<size_t>(lin)];
    t = add ? t + alpha * v : v;
  });
  return out;
}

// aten.index / aten.index_put: advanced indexing with index tensors at dims `indexed_dims`
// (attr; default 0, 1, ...: the exporter writes it when the index list has None entries).
// The index tensors broadcast together; when the indexed dims are adjacent the broadcast
// shape replaces them in place, otherwise it goes first (numpy / torch rules).
struct Advanced {
  std::vector<int64_t> dims;  // indexed dims of self, ascending
  Shape bshape;               // broadcast shape of the index tensors
  Shape out;                  // result shape of self[indices]
  size_t at = 0;              // where bshape sits in `out`
};

Advanced advanced(const Node& n, const Shape& self, const std::vector<Shape>& index_shapes) {
  Advanced r;
  if (n.has_attr("indexed_dims")) {
    r.dims = n.attr_ints("indexed_dims");
  } else {
    for (size_t i = 0; i < index_shapes.size(); ++i) r.dims.push_back(static_cast<int64_t>(i));
  }
  if (r.dims.size() != index_shapes.size() || r.dims.empty())
    bad(n, strcat(index_shapes.size(), " index tensors for indexed_dims ", format_attr(r.dims)));
  for (size_t i = 0; i < r.dims.size(); ++i) {
    if (r.dims[i] < 0 || r.dims[i] >= static_cast<int64_t>(self.size()) || (i && r.dims[i] <= r.dims[i - 1]))
      bad(n, strcat("indexed_dims ", format_attr(r.dims), " must be ascending dims of ", shape_str(self)));
    r.bshape = broadcast_shapes(r.bshape, index_shapes[i], n);
  }
  bool adjacent = r.dims.back() - r.dims.front() + 1 == static_cast<int64_t>(r.dims.size());
  r.at = adjacent ? static_cast<size_t>(r.dims.front()) : 0;
  for (size_t d = 0; d < self.size(); ++d) {
    if (adjacent && d == r.at) r.out.insert(r.out.end(), r.bshape.begin(), r.bshape.end());
    if (std::find(r.dims.begin(), r.dims.end(), static_cast<int64_t>(d)) == r.dims.end()) r.out.push_back(self[d]);
  }
  if (adjacent && r.at == self.size()) r.out.insert(r.out.end(), r.bshape.begin(), r.bshape.end());
  if (!adjacent) r.out.insert(r.out.begin(), r.bshape.begin(), r.bshape.end());
  return r;
}

TensorType index_type(const Graph& g, const Node& n) {
  std::vector<Shape> shapes;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    check_index_dtype(g, n, i);
    shapes.push_back(in(g, n, i).shape);
  }
  return {in(g, n, 0).dtype, advanced(n, in(g, n, 0).shape, shapes).out};
}

// Calls f(out_linear, self_offset) for every element of self[indices].
template <typename F>
void each_indexed(const Node& n, const Tensor& x, const std::vector<const Tensor*>& ix, F f) {
  std::vector<Shape> shapes;
  for (auto* t : ix) shapes.push_back(t->type.shape);
  Advanced r = advanced(n, x.type.shape, shapes);
  auto xst = contiguous_strides(x.type.shape);
  std::vector<std::vector<int64_t>> ist;  // index tensor strides into the broadcast shape
  for (auto* t : ix) {
    auto st = contiguous_strides(t->type.shape);
    std::vector<int64_t> b(r.bshape.size(), 0);
    size_t off = r.bshape.size() - t->type.shape.size();
    for (size_t k = 0; k < t->type.shape.size(); ++k) b[off + k] = t->type.shape[k] == 1 ? 0 : st[k];
    ist.push_back(b);
  }
  size_t nb = r.bshape.size();
  each(r.out, [&](int64_t lin, const std::vector<int64_t>& o) {
    std::vector<int64_t> bidx(o.begin() + static_cast<std::ptrdiff_t>(r.at), o.begin() + static_cast<std::ptrdiff_t>(r.at + nb));
    std::vector<int64_t> xi;
    size_t rest = 0;  // position in `o` of the next non-indexed dim
    for (size_t d = 0; d < x.type.shape.size(); ++d) {
      auto it = std::find(r.dims.begin(), r.dims.end(), static_cast<int64_t>(d));
      if (it != r.dims.end()) {
        auto k = static_cast<size_t>(it - r.dims.begin());
        xi.push_back(index_value(n, ix[k]->data[static_cast<size_t>(offset(bidx, ist[k]))], x.type.shape[d]));
      } else {
        if (rest == r.at) rest += nb;
        xi.push_back(o[rest++]);
      }
    }
    f(lin, offset(xi, xst));
  });
}

Tensor index(const Node& n, const Ins& a) {
  Tensor out(n.type);
  each_indexed(n, *a[0], Ins(a.begin() + 1, a.end()), [&](int64_t lin, int64_t o) {
    out.data[static_cast<size_t>(lin)] = a[0]->data[static_cast<size_t>(o)];
  });
  return out;
}

TensorType index_put_type(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) bad(n, "expects self, index tensors and values");
  std::vector<Shape> shapes;
  for (size_t i = 1; i + 1 < n.inputs.size(); ++i) {
    if (in(g, n, i).dtype == DType::boolean) bad(n, "boolean masks as indices are not supported");
    check_index_dtype(g, n, i);
    shapes.push_back(in(g, n, i).shape);
  }
  Advanced r = advanced(n, in(g, n, 0).shape, shapes);
  const Shape& v = in(g, n, n.inputs.size() - 1).shape;
  if (broadcast_shapes(v, r.out, n) != r.out) bad(n, strcat("values ", shape_str(v), " do not broadcast to ", shape_str(r.out)));
  return in(g, n, 0);
}

Tensor index_put(const Node& n, const Ins& a) {
  const Tensor& vals = *a.back();
  Tensor out(n.type);
  out.data = a[0]->data;
  bool accumulate = n.attr_bool("accumulate", false);
  std::vector<Shape> shapes;
  for (size_t i = 1; i + 1 < a.size(); ++i) shapes.push_back(a[i]->type.shape);
  Advanced r = advanced(n, a[0]->type.shape, shapes);
  auto vst = contiguous_strides(vals.type.shape);
  std::vector<int64_t> vb(r.out.size(), 0);
  size_t off = r.out.size() - vals.type.shape.size();
  for (size_t k = 0; k < vals.type.shape.size(); ++k) vb[off + k] = vals.type.shape[k] == 1 ? 0 : vst[k];
  auto ost = contiguous_strides(r.out);
  each_indexed(n, *a[0], Ins(a.begin() + 1, a.end() - 1), [&](int64_t lin, int64_t o) {
    int64_t v = 0, rem = lin;
    for (size_t d = 0; d < r.out.size(); ++d) {
      v += (rem / ost[d]) * vb[d];
      rem %= ost[d];
    }
    float& t = out.data[static_cast<size_t>(o)];
    t = accumulate ? t + vals.data[static_cast<size_t>(v)] : vals.data[static_cast<size_t>(v)];
  });
  return out;
}

TensorType masked_scatter_type(const Graph& g, const Node& n) {
  if (in(g, n, 1).dtype != DType::boolean) bad(n, "mask must be bool");
  return in(g, n, 0);
}

Tensor masked_scatter(const Node& n, const Ins& a) {
  Tensor out(n.type);
  out.data = a[0]->data;
  Tensor mask = *a[1];
  auto mst = contiguous_strides(mask.type.shape);
  std::vector<int64_t> mb(n.type.shape.size(), 0);
  size_t off = n.type.shape.size() - mask.type.shape.size();
  for (size_t k = 0; k < mask.type.shape.size(); ++k) mb[off + k] = mask.type.shape[k] == 1 ? 0 : mst[k];
  size_t next = 0;
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    if (mask.data[static_cast<size_t>(offset(idx, mb))] == 0) return;
    if (next >= a[2]->data.size()) bad(n, "source has fewer elements than the mask selects");
    out.data[static_cast<size_t>(lin)] = a[2]->data[next++];
  });
  return out;
}

// nonzero: the data decides the row count, so the exported (declared) type is taken as is.
TensorType nonzero_type(const Graph& g, const Node& n) {
  const TensorType& t = n.type;
  if (t.dtype != DType::i64 || t.rank() != 2 || t.shape[1] != in(g, n, 0).rank())
    bad(n, strcat("declared type ", type_str(t), " is not [N, ", in(g, n, 0).rank(), "] i64"));
  return t;
}

Tensor nonzero(const Node& n, const Ins& a) {
  std::vector<float> rows;
  each(a[0]->type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    if (a[0]->data[static_cast<size_t>(lin)] != 0)
      for (auto i : idx) rows.push_back(static_cast<float>(i));
  });
  Tensor out(n.type);
  if (rows.size() != out.data.size())
    bad(n, strcat("the data has ", rows.size() / std::max<size_t>(a[0]->type.shape.size(), 1), " nonzero elements, the graph declares ",
                  n.type.shape[0]));
  out.data = rows;
  return out;
}

// ---- movement the LPU views cannot express ---------------------------------------------------

TensorType flip_type(const Graph& g, const Node& n) {
  (void)normalize_dims(n.attr_ints("dims"), in(g, n, 0).rank(), n);
  return in(g, n, 0);
}

Tensor flip(const Node& n, const Ins& a) {
  auto dims = normalize_dims(n.attr_ints("dims"), a[0]->type.rank(), n);
  auto st = contiguous_strides(a[0]->type.shape);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    for (auto d : dims) idx[static_cast<size_t>(d)] = n.type.shape[static_cast<size_t>(d)] - 1 - idx[static_cast<size_t>(d)];
    out.data[static_cast<size_t>(lin)] = a[0]->data[static_cast<size_t>(offset(idx, st))];
  });
  return out;
}

TensorType as_strided_type(const Graph& g, const Node& n) {
  Shape s = n.attr_ints("size");
  auto st = n.attr_ints("stride");
  if (st.size() != s.size()) bad(n, "size and stride differ in length");
  int64_t last = n.attr_int("storage_offset", 0);
  for (size_t i = 0; i < s.size(); ++i) last += (s[i] - 1) * st[i];
  if (last >= in(g, n, 0).numel() || last < 0) bad(n, "the view reaches past the input's elements");
  return {in(g, n, 0).dtype, s};
}

Tensor as_strided(const Node& n, const Ins& a) {
  auto st = n.attr_ints("stride");
  int64_t base = n.attr_int("storage_offset", 0);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    out.data[static_cast<size_t>(lin)] = a[0]->data[static_cast<size_t>(base + offset(idx, st))];
  });
  return out;
}

// diagonal(offset, dim1, dim2): the two dims go, the diagonal becomes the last dim.
TensorType diagonal_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  size_t d1 = dim_of(n, "dim1", 0, x.rank()), d2 = dim_of(n, "dim2", 1, x.rank());
  if (d1 == d2) bad(n, "dim1 and dim2 must differ");
  int64_t off = n.attr_int("offset", 0);
  int64_t len = std::max<int64_t>(0, std::min(x.shape[d1] + std::min<int64_t>(off, 0), x.shape[d2] - std::max<int64_t>(off, 0)));
  if (len == 0) bad(n, "empty diagonals are not supported");
  TensorType t{x.dtype, {}};
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (d != d1 && d != d2) t.shape.push_back(x.shape[d]);
  t.shape.push_back(len);
  return t;
}

Tensor diagonal(const Node& n, const Ins& a) {
  const Shape& xs = a[0]->type.shape;
  int r = a[0]->type.rank();
  size_t d1 = dim_of(n, "dim1", 0, r), d2 = dim_of(n, "dim2", 1, r);
  int64_t off = n.attr_int("offset", 0);
  auto st = contiguous_strides(xs);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& o) {
    std::vector<int64_t> xi(xs.size());
    size_t k = 0;
    for (size_t d = 0; d < xs.size(); ++d)
      if (d != d1 && d != d2) xi[d] = o[k++];
    int64_t i = o.back();
    xi[d1] = i - std::min<int64_t>(off, 0);
    xi[d2] = i + std::max<int64_t>(off, 0);
    out.data[static_cast<size_t>(lin)] = a[0]->data[static_cast<size_t>(offset(xi, st))];
  });
  return out;
}

// Padding: constant_pad_nd (pad pairs from the last dim; negative pads crop), and
// reflection / replication pads of the last 1-3 dims.
TensorType pad_type(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  auto pad = n.attr_ints(n.op == "aten.constant_pad_nd" ? "pad" : "padding");
  if (pad.size() % 2 || pad.size() / 2 > t.shape.size()) bad(n, strcat("pad ", format_attr(pad), " does not fit rank ", t.rank()));
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t& s = t.shape[t.shape.size() - 1 - i];
    if (n.op.find("reflection") != std::string::npos && (pad[2 * i] >= s || pad[2 * i + 1] >= s))
      bad(n, "reflection padding must be smaller than the dim");
    s += pad[2 * i] + pad[2 * i + 1];
    if (s < 1) bad(n, "the padded result is empty");
  }
  return t;
}

Tensor pad(const Node& n, const Ins& a) {
  const Shape& xs = a[0]->type.shape;
  auto p = n.attr_ints(n.op == "aten.constant_pad_nd" ? "pad" : "padding");
  bool reflect = n.op.find("reflection") != std::string::npos, replicate = n.op.find("replication") != std::string::npos;
  auto value = static_cast<float>(n.attr_float("value", 0.0));
  auto st = contiguous_strides(xs);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, std::vector<int64_t> idx) {
    bool inside = true;
    for (size_t i = 0; i < p.size() / 2; ++i) {
      size_t d = xs.size() - 1 - i;
      int64_t j = idx[d] - p[2 * i], s = xs[d];
      if (j < 0 || j >= s) {
        if (reflect) j = j < 0 ? -j : 2 * (s - 1) - j;
        else if (replicate) j = std::clamp<int64_t>(j, 0, s - 1);
        else inside = false;
      }
      idx[d] = j;
    }
    out.data[static_cast<size_t>(lin)] = inside ? a[0]->data[static_cast<size_t>(offset(idx, st))] : value;
  });
  return out;
}

// ---- factories --------------------------------------------------------------------------------

double num(const Node& n, const char* key, double dflt) { return n.has_attr(key) ? n.attr_float(key, dflt) : dflt; }

bool is_float_attr(const Node& n, const char* key) { return n.has_attr(key) && std::holds_alternative<double>(n.attrs.at(key)); }

TensorType arange_type(const Graph&, const Node& n) {
  double start = num(n, "start", 0), end = num(n, "end", 0), step = num(n, "step", 1);
  if (step == 0) bad(n, "step must not be 0");
  auto len = static_cast<int64_t>(std::ceil((end - start) / step));
  if (len < 1) bad(n, "empty ranges are not supported");
  TensorType t{is_float_attr(n, "start") || is_float_attr(n, "end") || is_float_attr(n, "step") ? DType::f32 : DType::i64, {len}};
  if (auto d = aten::dtype_attr(n)) t.dtype = *d;
  return t;
}

Tensor arange(const Node& n, const Ins&) {
  Tensor out(n.type);
  double start = num(n, "start", 0), step = num(n, "step", 1);
  for (size_t i = 0; i < out.data.size(); ++i)
    {
    auto v = static_cast<float>(start + static_cast<double>(i) * step);
    out.data[i] = is_floating(n.type.dtype) ? round_to_dtype(v, n.type.dtype) : std::trunc(v);
  }
  return out;
}

TensorType random_type(const Graph&, const Node& n) {
  if (n.op == "aten.randperm") {
    int64_t k = n.attr_int("n");
    if (k < 1) bad(n, "n must be >= 1");
    return {aten::dtype_attr(n).value_or(DType::i64), {k}};
  }
  Shape s = n.attr_ints("size");
  for (auto d : s)
    if (d < 1) bad(n, "empty or negative size");
  return {aten::dtype_attr(n).value_or(DType::f32), s};
}

// Random ops get a fixed generator seeded by the node's name: runs are reproducible, but the
// numbers are not PyTorch's (no functional comparison can hold for them).
Tensor random(const Node& n, const Ins&) {
  std::mt19937_64 gen(std::hash<std::string>{}(n.name));
  Tensor out(n.type);
  if (n.op == "aten.randperm") {
    std::vector<int64_t> p(out.data.size());
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), gen);
    for (size_t i = 0; i < p.size(); ++i) out.data[i] = static_cast<float>(p[i]);
    return out;
  }
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : out.data) v = round_to_dtype(n.op == "aten.randn" ? normal(gen) : uni(gen), n.type.dtype);
  return out;
}

// ---- shape queries and scalars (static shapes: known when the graph is built) -----------------

TensorType scalar_i64(const Graph&, const Node&) { return {DType::i64, {}}; }

Tensor sym(const Node& n, const Ins& a) {
  const Shape& s = a[0]->type.shape;
  Tensor out(n.type);
  if (n.op == "aten.sym_numel") out.data[0] = static_cast<float>(a[0]->numel());
  else if (n.op == "aten.sym_storage_offset") out.data[0] = 0;
  else {
    size_t d = dim_of(n, "dim", 0, a[0]->type.rank());
    out.data[0] = static_cast<float>(n.op == "aten.sym_size" ? s[d] : contiguous_strides(s)[d]);
  }
  return out;
}

TensorType item_type(const Graph& g, const Node& n) {
  if (in(g, n, 0).numel() != 1) bad(n, "needs a one-element tensor");
  return {in(g, n, 0).dtype, {}};
}

Tensor item(const Node& n, const Ins& a) {
  Tensor out(n.type);
  out.data[0] = a[0]->data[0];
  return out;
}

// ---- pooling, convolution, resampling, distances ---------------------------------------------

// The spatial dims of pooling / conv / upsample: the last k of an [N, C, *] or [C, *] input.
std::vector<int64_t> spatial_attr(const Node& n, const char* key, size_t k, int64_t dflt) {
  std::vector<int64_t> v = n.has_attr(key) ? n.attr_ints(key) : std::vector<int64_t>{};
  if (v.empty()) v = {dflt};
  if (v.size() == 1) v.resize(k, v[0]);
  if (v.size() != k) bad(n, strcat(key, " ", format_attr(v), " needs ", k, " entries"));
  return v;
}

size_t pool_dims(const Node& n) {
  for (char c : {'1', '2', '3'})
    if (n.op.find(std::string(1, c) + "d") != std::string::npos) return static_cast<size_t>(c - '0');
  return 2;
}

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  double len = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s) + 1;
  auto out = static_cast<int64_t>(ceil_mode ? std::ceil(len) : std::floor(len));
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

TensorType pool_type(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  size_t k = pool_dims(n);
  if (t.shape.size() < k + 1) bad(n, strcat("expects [N, C, ", k, " spatial dims], got ", shape_str(t.shape)));
  size_t lead = t.shape.size() - k;
  bool adaptive = n.op.find("adaptive") != std::string::npos;
  auto ks = adaptive ? std::vector<int64_t>{} : spatial_attr(n, "kernel_size", k, 1);
  auto st = adaptive ? std::vector<int64_t>{} : spatial_attr(n, "stride", k, 0);
  auto pd = adaptive ? std::vector<int64_t>{} : spatial_attr(n, "padding", k, 0);
  auto dl = adaptive ? std::vector<int64_t>{} : spatial_attr(n, "dilation", k, 1);
  auto os = adaptive ? spatial_attr(n, "output_size", k, 1) : std::vector<int64_t>{};
  for (size_t i = 0; i < k; ++i) {
    int64_t& s = t.shape[lead + i];
    s = adaptive ? os[i] : pooled_size(s, ks[i], st[i] ? st[i] : ks[i], pd[i], dl[i], n.attr_bool("ceil_mode", false));
    if (s < 1) bad(n, "the pooled result is empty");
  }
  if (n.op.find("with_indices") != std::string::npos && aten::result_index(n, 2) == 1) t.dtype = DType::i64;
  return t;
}

Tensor pool(const Node& n, const Ins& a) {
  const Shape& xs = a[0]->type.shape;
  size_t k = pool_dims(n), lead = xs.size() - k;
  bool adaptive = n.op.find("adaptive") != std::string::npos;
  bool is_max = n.op.find("max_pool") != std::string::npos;
  bool want_index = is_max && n.attr_int("result", 0) == 1;
  auto ks = adaptive ? std::vector<int64_t>(k, 0) : spatial_attr(n, "kernel_size", k, 1);
  auto st = adaptive ? std::vector<int64_t>(k, 1) : spatial_attr(n, "stride", k, 0);
  auto pd = adaptive ? std::vector<int64_t>(k, 0) : spatial_attr(n, "padding", k, 0);
  auto dl = adaptive ? std::vector<int64_t>(k, 1) : spatial_attr(n, "dilation", k, 1);
  for (size_t i = 0; i < k; ++i)
    if (!st[i]) st[i] = ks[i];
  bool include_pad = n.attr_bool("count_include_pad", true);
  auto xst = contiguous_strides(xs);
  Shape spatial(xs.begin() + static_cast<std::ptrdiff_t>(lead), xs.end());
  auto sst = contiguous_strides(spatial);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& o) {
    std::vector<int64_t> lo(k), hi(k), step(k);
    for (size_t i = 0; i < k; ++i) {
      int64_t in_s = xs[lead + i], out_s = n.type.shape[lead + i];
      if (adaptive) {
        lo[i] = (o[lead + i] * in_s) / out_s;
        hi[i] = ((o[lead + i] + 1) * in_s + out_s - 1) / out_s;
        step[i] = 1;
      } else {
        lo[i] = o[lead + i] * st[i] - pd[i];
        hi[i] = lo[i] + (ks[i] - 1) * dl[i] + 1;
        step[i] = dl[i];
      }
    }
    double acc = is_max ? -INFINITY : 0.0;
    int64_t count = 0, arg = 0, window = 1;
    Shape wshape(k);
    for (size_t i = 0; i < k; ++i) wshape[i] = (hi[i] - lo[i] + step[i] - 1) / step[i];
    each(wshape, [&](int64_t, const std::vector<int64_t>& w) {
      std::vector<int64_t> xi(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(lead));
      bool inside = true;
      for (size_t i = 0; i < k; ++i) {
        int64_t p = lo[i] + w[i] * step[i];
        inside = inside && p >= 0 && p < xs[lead + i];
        xi.push_back(p);
      }
      if (!inside) {
        if (!is_max && include_pad && !adaptive) {
          bool in_padded = true;
          for (size_t i = 0; i < k; ++i) in_padded = in_padded && xi[lead + i] < xs[lead + i] + pd[i];
          count += in_padded;
        }
        return;
      }
      float v = a[0]->data[static_cast<size_t>(offset(xi, xst))];
      if (is_max) {
        if (v > acc || std::isnan(v)) {
          acc = v;
          std::vector<int64_t> sp(xi.begin() + static_cast<std::ptrdiff_t>(lead), xi.end());
          arg = offset(sp, sst);
        }
      } else {
        acc += v;
        ++count;
      }
    });
    (void)window;
    if (!is_max) {
      if (n.has_attr("divisor_override")) count = n.attr_int("divisor_override");
      acc /= static_cast<double>(std::max<int64_t>(count, 1));
    }
    out.data[static_cast<size_t>(lin)] = want_index ? static_cast<float>(arg) : static_cast<float>(acc);
  });
  return out;
}

// convolution(input [N, Cin, *], weight [Cout, Cin/groups, *k], bias?), not transposed.
TensorType conv_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  const TensorType& w = in(g, n, 1);
  if (x.rank() < 3 || w.rank() != x.rank()) bad(n, strcat("expects [N, C, *] and a weight of the same rank, got ", shape_str(x.shape), " and ", shape_str(w.shape)));
  size_t k = static_cast<size_t>(x.rank() - 2);
  int64_t groups = n.attr_int("groups", 1);
  bool transposed = n.attr_bool("transposed", false);
  auto st = spatial_attr(n, "stride", k, 1), pd = spatial_attr(n, "padding", k, 0), dl = spatial_attr(n, "dilation", k, 1);
  auto op = spatial_attr(n, "output_padding", k, 0);
  TensorType t{x.dtype, {x.shape[0], transposed ? w.shape[1] * groups : w.shape[0]}};
  if (!transposed && x.shape[1] != w.shape[1] * groups) bad(n, "input channels do not match weight * groups");
  for (size_t i = 0; i < k; ++i) {
    int64_t s = transposed ? (x.shape[2 + i] - 1) * st[i] - 2 * pd[i] + dl[i] * (w.shape[2 + i] - 1) + op[i] + 1
                           : pooled_size(x.shape[2 + i], w.shape[2 + i], st[i], pd[i], dl[i], false);
    if (s < 1) bad(n, "the convolution result is empty");
    t.shape.push_back(s);
  }
  return t;
}

Tensor conv(const Node& n, const Ins& a) {
  if (n.attr_bool("transposed", false)) bad(n, "transposed convolution has no host semantics yet (timing runs only)");
  const Tensor& x = *a[0];
  const Tensor& w = *a[1];
  const Tensor* bias = a.size() > 2 ? a[2] : nullptr;
  size_t k = static_cast<size_t>(x.type.rank() - 2);
  auto st = spatial_attr(n, "stride", k, 1), pd = spatial_attr(n, "padding", k, 0), dl = spatial_attr(n, "dilation", k, 1);
  int64_t groups = n.attr_int("groups", 1);
  int64_t cin_g = w.type.shape[1], cout_g = w.type.shape[0] / groups;
  auto xst = contiguous_strides(x.type.shape), wst = contiguous_strides(w.type.shape);
  Shape ker(w.type.shape.begin() + 1, w.type.shape.end());  // [Cin/groups, *k]
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& o) {
    int64_t co = o[1], g = co / cout_g;
    double acc = bias ? bias->data[static_cast<size_t>(co)] : 0.0;
    each(ker, [&](int64_t, const std::vector<int64_t>& kk) {
      std::vector<int64_t> xi{o[0], g * cin_g + kk[0]};
      for (size_t i = 0; i < k; ++i) {
        int64_t p = o[2 + i] * st[i] - pd[i] + kk[1 + i] * dl[i];
        if (p < 0 || p >= x.type.shape[2 + i]) return;
        xi.push_back(p);
      }
      std::vector<int64_t> wi{co};
      wi.insert(wi.end(), kk.begin(), kk.end());
      acc += static_cast<double>(x.data[static_cast<size_t>(offset(xi, xst))]) * w.data[static_cast<size_t>(offset(wi, wst))];
    });
    out.data[static_cast<size_t>(lin)] = static_cast<float>(acc);
  });
  return out;
}

// upsample_nearest2d / upsample_bilinear2d: output_size, or the input size times scale_factors.
TensorType upsample_type(const Graph& g, const Node& n) {
  TensorType t = in(g, n, 0);
  if (t.rank() != 4) bad(n, "expects [N, C, H, W]");
  if (n.has_attr("output_size")) {
    auto os = n.attr_ints("output_size");
    if (os.size() != 2) bad(n, "output_size needs 2 entries");
    t.shape[2] = os[0], t.shape[3] = os[1];
  } else {
    bad(n, "only output_size is supported (scale_factors are floats the graph format cannot carry as a list)");
  }
  return t;
}

Tensor upsample(const Node& n, const Ins& a) {
  const Shape& xs = a[0]->type.shape;
  auto st = contiguous_strides(xs);
  bool bilinear = n.op == "aten.upsample_bilinear2d", align = n.attr_bool("align_corners", false);
  Tensor out(n.type);
  each(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& o) {
    auto src = [&](size_t d) {
      double in_s = static_cast<double>(xs[d]), out_s = static_cast<double>(n.type.shape[d]);
      if (!bilinear) return std::min(std::floor(static_cast<double>(o[d]) * in_s / out_s), in_s - 1);
      if (align) return out_s > 1 ? static_cast<double>(o[d]) * (in_s - 1) / (out_s - 1) : 0.0;
      return std::max((static_cast<double>(o[d]) + 0.5) * in_s / out_s - 0.5, 0.0);
    };
    double y = src(2), x = src(3);
    auto at = [&](int64_t yy, int64_t xx) {
      yy = std::min<int64_t>(yy, xs[2] - 1), xx = std::min<int64_t>(xx, xs[3] - 1);
      return static_cast<double>(a[0]->data[static_cast<size_t>(o[0] * st[0] + o[1] * st[1] + yy * st[2] + xx * st[3])]);
    };
    auto y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
    double v = at(y0, x0);
    if (bilinear) {
      double fy = y - static_cast<double>(y0), fx = x - static_cast<double>(x0);
      v = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
    }
    out.data[static_cast<size_t>(lin)] = static_cast<float>(v);
  });
  return out;
}

// _cdist_forward(x1 [..., P, M], x2 [..., R, M], p) -> [..., P, R]; _pdist_forward(x [N, M], p)
// -> the upper triangle of the pairwise distances, row by row.
TensorType cdist_type(const Graph& g, const Node& n) {
  const TensorType& a = in(g, n, 0);
  if (n.op == "aten._pdist_forward") {
    if (a.rank() != 2 || a.shape[0] < 2) bad(n, "expects [N >= 2, M]");
    return {a.dtype, {a.shape[0] * (a.shape[0] - 1) / 2}};
  }
  const TensorType& b = in(g, n, 1);
  if (a.rank() < 2 || b.rank() < 2 || a.shape.back() != b.shape.back()) bad(n, "expects [..., P, M] and [..., R, M]");
  Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2), n);
  batch.push_back(a.shape[a.shape.size() - 2]);
  batch.push_back(b.shape[b.shape.size() - 2]);
  return {a.dtype, batch};
}

double p_distance(const float* x, const float* y, int64_t m, double p) {
  double acc = 0;
  for (int64_t i = 0; i < m; ++i) {
    double d = std::fabs(static_cast<double>(x[i]) - y[i]);
    if (p == 0) acc += d != 0;
    else if (std::isinf(p)) acc = std::max(acc, d);
    else acc += std::pow(d, p);
  }
  return p == 0 || std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
}

Tensor cdist(const Node& n, const Ins& a) {
  double p = n.attr_float("p", 2.0);
  Tensor out(n.type);
  const Tensor& x = *a[0];
  int64_t m = x.type.shape.back();
  if (n.op == "aten._pdist_forward") {
    size_t k = 0;
    for (int64_t i = 0; i < x.type.shape[0]; ++i)
      for (int64_t j = i + 1; j < x.type.shape[0]; ++j) out.data[k++] = static_cast<float>(p_distance(&x.data[static_cast<size_t>(i * m)], &x.data[static_cast<size_t>(j * m)], m, p));
    return out;
  }
  const Tensor& y = *a[1];
  int64_t P = x.type.shape[x.type.shape.size() - 2], R = y.type.shape[y.type.shape.size() - 2];
  Shape batch(n.type.shape.begin(), n.type.shape.end() - 2);
  Shape xb(x.type.shape.begin(), x.type.shape.end() - 2), yb(y.type.shape.begin(), y.type.shape.end() - 2);
  auto bst = [&](const Shape& s) {
    auto st = contiguous_strides(s);
    std::vector<int64_t> b(batch.size(), 0);
    for (size_t k = 0; k < s.size(); ++k) b[batch.size() - s.size() + k] = s[k] == 1 ? 0 : st[k];
    return b;
  };
  auto xs = bst(xb), ys = bst(yb);
  each(batch, [&](int64_t bl, const std::vector<int64_t>& bi) {
    const float* X = x.data.data() + offset(bi, xs) * P * m;
    const float* Y = y.data.data() + offset(bi, ys) * R * m;
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j)
        out.data[static_cast<size_t>((bl * P + i) * R + j)] = static_cast<float>(p_distance(X + i * m, Y + j * m, m, p));
  });
  return out;
}

// embedding_dense_backward(grad [..., D], indices [...], num_weights, padding_idx): the
// gradient rows summed per index (a scatter-add); rows of padding_idx stay zero.
TensorType embedding_backward_type(const Graph& g, const Node& n) {
  check_index_dtype(g, n, 1);
  return {in(g, n, 0).dtype, {n.attr_int("num_weights"), in(g, n, 0).shape.back()}};
}

Tensor embedding_backward(const Node& n, const Ins& a) {
  int64_t V = n.type.shape[0], D = n.type.shape[1], pad_idx = n.attr_int("padding_idx", -1);
  Tensor out(n.type);
  for (int64_t i = 0; i < a[1]->numel(); ++i) {
    int64_t row = index_value(n, a[1]->data[static_cast<size_t>(i)], V);
    if (row == pad_idx) continue;
    for (int64_t d = 0; d < D; ++d) out.data[static_cast<size_t>(row * D + d)] += a[0]->data[static_cast<size_t>(i * D + d)];
  }
  return out;
}

// ---- priced in timing runs only (no host semantics yet) -----------------------------------

// Backward ops: each result has the shape of the forward operand it is the gradient of.
TensorType grad_like(const Graph& g, const Node& n) {
  if (n.op == "aten.convolution_backward") {
    int64_t r = aten::result_index(n, 3);
    if (r == 2) return {in(g, n, 0).dtype, {in(g, n, 2).shape[0]}};
    return in(g, n, r == 0 ? 1 : 2);
  }
  if (n.op == "aten.native_layer_norm_backward" || n.op == "aten.native_group_norm_backward") {
    int64_t r = aten::result_index(n, 3);
    if (r == 0) return in(g, n, 1);
    if (n.inputs.size() <= 4) bad(n, "weight and bias gradients need the weight input");
    return in(g, n, 4);  // (grad_out, input, mean, rstd, weight, ...): [C] like the weight
  }
  return in(g, n, 1);  // pool backward: grad_output, self -> self's shape
}

TensorType grid_sampler_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  const TensorType& grid = in(g, n, 1);
  if (x.rank() != 4 || grid.rank() != 4 || grid.shape[3] != 2) bad(n, "expects [N, C, H, W] and a grid [N, Ho, Wo, 2]");
  return {x.dtype, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}};
}

TensorType col2im_type(const Graph& g, const Node& n) {
  const TensorType& x = in(g, n, 0);
  auto os = n.attr_ints("output_size"), ks = n.attr_ints("kernel_size");
  if (x.rank() < 2 || os.size() != 2 || ks.size() != 2) bad(n, "expects [N, C*kh*kw, L] with 2-D output_size and kernel_size");
  int64_t c = x.shape[x.shape.size() - 2] / (ks[0] * ks[1]);
  Shape s(x.shape.begin(), x.shape.end() - 2);
  s.insert(s.end(), {c, os[0], os[1]});
  return {x.dtype, s};
}

TensorType embedding_bag_type(const Graph& g, const Node& n) {
  const TensorType& w = in(g, n, 0);
  int64_t bags = in(g, n, 2).numel() - (n.attr_bool("include_last_offset", false) ? 1 : 0);
  switch (aten::result_index(n, 4)) {
    case 0: return {w.dtype, {bags, w.shape[1]}};
    case 1: return {DType::i64, {in(g, n, 1).numel()}};
    case 2: return {DType::i64, {bags}};
    default: return {DType::i64, {bags}};
  }
}

TensorType complex_fft(const Graph&, const Node& n) {
  bad(n, "complex tensors are not in the graph format (f32 f16 bf16 i64 i32 bool); an FFT cannot be exported");
}

struct Entry {
  const char* name;
  int lo, hi;
  Infer infer;
  Eval eval;  // nullptr: priced in timing runs, no functional semantics
  const char* doc;
  bool multi = false;  // takes a `result` attr
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"aten.sort", 1, 1, sort_type, sort, "sort along {dim = -1}, {descending}; result 0 values, 1 indices", true},
      {"aten.topk", 1, 1, topk_type, topk, "{k} largest (or smallest) along {dim = -1}; result 0 values, 1 indices", true},
      {"aten.argmax", 1, 1, arg_type, arg_extreme, "index of the first maximum over {dim} (all if absent), {keepdim}"},
      {"aten.argmin", 1, 1, arg_type, arg_extreme, "index of the first minimum over {dim} (all if absent), {keepdim}"},
      {"aten.max", 1, 1, arg_type, arg_extreme, "max over {dim} (result 0 values, 1 indices) or of everything", true},
      {"aten.min", 1, 1, arg_type, arg_extreme, "min over {dim} (result 0 values, 1 indices) or of everything", true},
      {"aten.histc", 1, 1, histc_type, histc, "counts in {bins = 100} equal bins over [{min}, {max}] (both 0: the data's range)"},
      {"aten.cumsum", 1, 1, scan_type, cumulative, "running sum along {dim}, {dtype}"},
      {"aten.cumprod", 1, 1, scan_type, cumulative, "running product along {dim}, {dtype}"},
      {"aten.prod", 1, 1, prod_type, prod, "product over {dim} (all if absent), {keepdim}, {dtype}"},
      {"aten.gather", 2, 2, gather_type, gather, "self[..., index[i], ...] along {dim}"},
      {"aten.scatter", 2, 3, scatter_type, scatter, "self with src (or {value}) written at index along {dim}, {reduce}"},
      {"aten.scatter_add", 3, 3, scatter_type, scatter, "self with src added at index along {dim}"},
      {"aten.scatter_reduce", 3, 3, scatter_type, scatter, "self with src reduced ({reduce}: sum prod mean amax amin) at index, {include_self}"},
      {"aten.index_select", 2, 2, index_select_type, index_select, "slices index[i] of {dim}"},
      {"aten.index_add", 3, 3, index_update_type, index_update, "self with source slice i added to slice index[i] of {dim}, {alpha}"},
      {"aten.index_copy", 3, 3, index_update_type, index_update, "self with slice index[i] of {dim} replaced by source slice i"},
      {"aten.index", 2, 1 << 10, index_type, index, "self[indices] (advanced indexing; {indexed_dims} for None entries)"},
      {"aten.index_put", 3, 1 << 10, index_put_type, index_put, "self with self[indices] = values ({accumulate}; {indexed_dims})"},
      {"aten.masked_scatter", 3, 3, masked_scatter_type, masked_scatter, "self with source's elements, in order, where mask"},
      {"aten.nonzero", 1, 1, nonzero_type, nonzero, "[N, rank] indices of nonzero elements (N from the data)"},
      {"aten.flip", 1, 1, flip_type, flip, "reverse {dims}"},
      {"aten.as_strided", 1, 1, as_strided_type, as_strided, "view of {size} with {stride}, {storage_offset} (of contiguous self)"},
      {"aten.diagonal", 1, 1, diagonal_type, diagonal, "diagonal {offset} of {dim1}, {dim2}, as the last dim"},
      {"aten.constant_pad_nd", 1, 1, pad_type, pad, "pad pairs from the last dim with {value} (negative pads crop)"},
      {"aten.reflection_pad1d", 1, 1, pad_type, pad, "reflect-pad the last dim by {padding}"},
      {"aten.reflection_pad2d", 1, 1, pad_type, pad, "reflect-pad the last 2 dims by {padding}"},
      {"aten.reflection_pad3d", 1, 1, pad_type, pad, "reflect-pad the last 3 dims by {padding}"},
      {"aten.replication_pad2d", 1, 1, pad_type, pad, "edge-pad the last 2 dims by {padding}"},
      {"aten.replication_pad3d", 1, 1, pad_type, pad, "edge-pad the last 3 dims by {padding}"},
      {"aten.arange", 0, 0, arange_type, arange, "[{start}, {end}) by {step}, {dtype}"},
      {"aten.rand", 0, 0, random_type, random, "uniform [0, 1) of {size} (a fixed generator, not PyTorch's numbers)"},
      {"aten.randn", 0, 0, random_type, random, "normal(0, 1) of {size} (a fixed generator, not PyTorch's numbers)"},
      {"aten.randperm", 0, 0, random_type, random, "a permutation of 0..{n}-1 (a fixed generator, not PyTorch's)"},
      {"aten.sym_size", 1, 1, scalar_i64, sym, "size of {dim} as a zero-dim i64"},
      {"aten.sym_stride", 1, 1, scalar_i64, sym, "contiguous stride of {dim} as a zero-dim i64"},
      {"aten.sym_numel", 1, 1, scalar_i64, sym, "element count as a zero-dim i64"},
      {"aten.sym_storage_offset", 1, 1, scalar_i64, sym, "storage offset (0: values are contiguous)"},
      {"aten._local_scalar_dense", 1, 1, item_type, item, ".item(): the one element as a zero-dim tensor"},
      {"aten.avg_pool2d", 1, 1, pool_type, pool, "average pool {kernel_size, stride, padding, ceil_mode, count_include_pad}"},
      {"aten.avg_pool3d", 1, 1, pool_type, pool, "average pool (3-D)"},
      {"aten.max_pool2d_with_indices", 1, 1, pool_type, pool, "max pool; result 0 values, 1 flat spatial indices", true},
      {"aten.max_pool3d_with_indices", 1, 1, pool_type, pool, "max pool (3-D); result 0 values, 1 indices", true},
      {"aten._adaptive_avg_pool2d", 1, 1, pool_type, pool, "adaptive average pool to {output_size}"},
      {"aten._adaptive_avg_pool3d", 1, 1, pool_type, pool, "adaptive average pool to {output_size} (3-D)"},
      {"aten.convolution", 2, 3, conv_type, conv, "N-d convolution {stride, padding, dilation, groups} (transposed: timing only)"},
      {"aten.upsample_nearest2d", 1, 1, upsample_type, upsample, "nearest resize to {output_size}"},
      {"aten.upsample_bilinear2d", 1, 1, upsample_type, upsample, "bilinear resize to {output_size}, {align_corners}"},
      {"aten._cdist_forward", 2, 2, cdist_type, cdist, "p-norm distances of rows, {p}"},
      {"aten._pdist_forward", 1, 1, cdist_type, cdist, "p-norm distances of row pairs i < j, {p}"},
      {"aten.embedding_dense_backward", 2, 2, embedding_backward_type, embedding_backward, "gradient rows summed per index"},
      // Priced in timing runs; functional mode reports that they have no host semantics.
      {"aten.grid_sampler_2d", 2, 2, grid_sampler_type, nullptr, "sample input at grid points (timing only)"},
      {"aten.col2im", 1, 1, col2im_type, nullptr, "fold columns into an image (timing only)"},
      {"aten._embedding_bag", 3, 4, embedding_bag_type, nullptr, "bags of embeddings (timing only)", true},
      {"aten._fft_r2c", 1, 1, complex_fft, nullptr, "real-to-complex FFT (complex dtypes: not exportable)"},
      {"aten._fft_c2r", 1, 1, complex_fft, nullptr, "complex-to-real FFT (complex dtypes: not exportable)"},
      {"aten.convolution_backward", 3, 3, grad_like, nullptr, "gradients of convolution (timing only)", true},
      {"aten.native_layer_norm_backward", 3, 7, grad_like, nullptr, "gradients of layer norm (timing only)", true},
      {"aten.native_group_norm_backward", 4, 5, grad_like, nullptr, "gradients of group norm (timing only)", true},
      {"aten.avg_pool2d_backward", 2, 2, grad_like, nullptr, "gradient of avg_pool2d (timing only)"},
      {"aten._adaptive_avg_pool2d_backward", 2, 2, grad_like, nullptr, "gradient of adaptive avg pool (timing only)"},
      {"aten.max_pool2d_with_indices_backward", 3, 3, grad_like, nullptr, "gradient of max pool (timing only)"},
  };
  return e;
}

const Entry* find_entry(const std::string& op) {
  static const std::map<std::string, const Entry*> index = [] {
    std::map<std::string, const Entry*> m;
    for (const auto& e : entries()) m[e.name] = &e;
    return m;
  }();
  auto it = index.find(op);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace

std::vector<OpInfo> registry() {
  std::vector<OpInfo> out;
  for (const auto& e : entries()) {
    Infer f = e.infer;
    bool multi = e.multi;
    auto infer = [f, multi](const Graph& g, const Node& n) {
      if (!multi && n.has_attr("result")) bad(n, "this op has a single result; 'result' is not allowed");
      return f(g, n);
    };
    out.push_back({e.name, OpCategory::Host, e.lo, e.hi, infer, e.doc});
  }
  return out;
}

bool has_semantics(const std::string& op) {
  const Entry* e = find_entry(op);
  return e && e->eval;
}

Tensor evaluate(const Node& n, const std::vector<const Tensor*>& in) {
  const Entry* e = find_entry(n.op);
  if (!e) throw InputError(strcat("node %", n.name, ": '", n.op, "' is not a host op"));
  if (!e->eval)
    throw InputError(strcat("node %", n.name, " (", n.op, "): this host op is priced in timing runs but has no host "
                            "semantics for functional mode yet"));
  return e->eval(n, in);
}

}  // namespace lpu::host_ops
