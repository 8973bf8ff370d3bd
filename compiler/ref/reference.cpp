#include "ref/reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "graph/ops.h"
#include "support/error.h"

namespace lpu {
namespace {

// Element offset into `src` (shape `from`) for output multi-index `idx` of shape `to`,
// following numpy broadcasting (size-1 and missing leading dims repeat).
struct Broadcaster {
  std::vector<int64_t> strides;  // per output dim, 0 where broadcast
  Broadcaster(const Shape& from, const Shape& to) : strides(to.size(), 0) {
    auto st = contiguous_strides(from);
    size_t off = to.size() - from.size();
    for (size_t i = 0; i < from.size(); ++i)
      strides[off + i] = from[i] == 1 ? 0 : st[i];
  }
};

template <typename F>
Tensor map_n(const Node& n, const std::vector<const Tensor*>& in, F f) {
  Tensor out(n.type);
  const Shape& s = n.type.shape;
  std::vector<Broadcaster> bc;
  for (auto* t : in) bc.emplace_back(t->type.shape, s);
  std::vector<int64_t> idx(s.size(), 0);
  std::vector<float> args(in.size());
  for (int64_t lin = 0; lin < out.numel(); ++lin) {
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < s.size(); ++d) off += idx[d] * bc[k].strides[d];
      args[k] = in[k]->data[static_cast<size_t>(off)];
    }
    out.data[static_cast<size_t>(lin)] = f(args);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor reduce(const Node& n, const Tensor& x) {
  auto dims = normalize_dims(n.attr_ints("dims"), x.type.rank(), n);
  const Shape& s = x.type.shape;
  std::vector<bool> red(s.size(), false);
  for (auto d : dims) red[static_cast<size_t>(d)] = true;
  // Output index (keepdim layout) for each input element.
  Shape kept = s;
  for (auto d : dims) kept[static_cast<size_t>(d)] = 1;
  auto kst = contiguous_strides(kept);
  int64_t out_n = numel(kept);
  const std::string& op = n.op;
  std::vector<double> acc(static_cast<size_t>(out_n),
                          op == "amax" ? -INFINITY : op == "amin" ? INFINITY : 0.0);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t lin = 0; lin < x.numel(); ++lin) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!red[d]) o += idx[d] * kst[d];
    double v = x.data[static_cast<size_t>(lin)];
    double& a = acc[static_cast<size_t>(o)];
    if (op == "amax") a = std::max(a, v);
    else if (op == "amin") a = std::min(a, v);
    else a += v;
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  int64_t count = x.numel() / std::max<int64_t>(out_n, 1);
  Tensor out(n.type);
  for (int64_t i = 0; i < out_n; ++i)
    out.data[static_cast<size_t>(i)] =
        static_cast<float>(op == "mean" ? acc[static_cast<size_t>(i)] / static_cast<double>(count) : acc[static_cast<size_t>(i)]);
  return out;
}

// Calls f(out_linear, out_multi_index) for every element of `shape`, row-major.
template <typename F>
void for_each_index(const Shape& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = numel(shape);
  for (int64_t lin = 0; lin < n; ++lin) {
    f(lin, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offset_of(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// torch.matmul with broadcast batch dims (see graph/ops.cpp); fp32 in, double accumulation.
Tensor matmul(const Node& n, const Tensor& a, const Tensor& b) {
  Tensor out(n.type);
  const Shape& as = a.type.shape;
  const Shape& bs = b.type.shape;
  int64_t K = as.back(), N = bs.back();
  int64_t M = as.size() >= 2 ? as[as.size() - 2] : 1;
  Shape batch(n.type.shape.begin(), n.type.shape.end() - (as.size() >= 2 ? 2 : 1));
  Shape ab = as.size() >= 2 ? Shape(as.begin(), as.end() - 2) : Shape{};
  Shape bb(bs.begin(), bs.end() - 2);
  Broadcaster abc(ab, batch), bbc(bb, batch);
  int64_t a_mat = M * K, b_mat = K * N;
  for_each_index(batch, [&](int64_t lin, const std::vector<int64_t>& idx) {
    int64_t ao = offset_of(idx, abc.strides) * a_mat, bo = offset_of(idx, bbc.strides) * b_mat;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(a.data[static_cast<size_t>(ao + m * K + k)]) * b.data[static_cast<size_t>(bo + k * N + j)];
        out.data[static_cast<size_t>(lin * M * N + m * N + j)] = static_cast<float>(acc);
      }
  });
  return out;
}

Tensor view_op(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  Tensor out(n.type);
  auto xst = contiguous_strides(x.type.shape);
  if (n.op == "reshape") {
    out.data = x.data;
  } else if (n.op == "expand") {
    Broadcaster bc(x.type.shape, n.type.shape);
    for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
      out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(offset_of(idx, bc.strides))];
    });
  } else if (n.op == "permute") {
    auto dims = n.attr_ints("dims");
    std::vector<int64_t> st;
    for (auto d : dims) st.push_back(xst[static_cast<size_t>(d < 0 ? d + x.type.rank() : d)]);
    for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
      out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(offset_of(idx, st))];
    });
  } else if (n.op == "slice") {
    int64_t dim = normalize_dims({n.attr_int("dim")}, x.type.rank(), n)[0];
    int64_t size = x.type.shape[static_cast<size_t>(dim)];
    int64_t start = n.attr_int("start", 0), step = n.attr_int("step", 1);
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    std::vector<int64_t> st = xst;
    st[static_cast<size_t>(dim)] *= step;
    int64_t base = start * xst[static_cast<size_t>(dim)];
    for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
      out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(base + offset_of(idx, st))];
    });
  } else if (n.op == "cat") {
    int64_t dim = normalize_dims({n.attr_int("dim", 0)}, x.type.rank(), n)[0];
    auto ost = contiguous_strides(n.type.shape);
    int64_t at = 0;
    for (const Tensor* t : in) {
      for_each_index(t->type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
        int64_t o = offset_of(idx, ost) + at * ost[static_cast<size_t>(dim)];
        out.data[static_cast<size_t>(o)] = t->data[static_cast<size_t>(lin)];
      });
      at += t->type.shape[static_cast<size_t>(dim)];
    }
  } else if (n.op == "embedding") {
    const Tensor& idx = *in[1];
    int64_t V = x.type.shape[0], D = x.type.shape[1];
    for (int64_t r = 0; r < idx.numel(); ++r) {
      int64_t row = static_cast<int64_t>(idx.data[static_cast<size_t>(r)]);
      if (row < 0 || row >= V)
        throw InputError(strcat("node %", n.name, " (embedding): index ", row, " out of range [0, ", V, ")"));
      std::copy_n(x.data.begin() + row * D, D, out.data.begin() + r * D);
    }
  } else {
    throw InternalError("reference: no view semantics for " + n.op);
  }
  return out;
}

using Fn = std::function<float(const std::vector<float>&)>;
const std::map<std::string, Fn>& pointwise_table() {
  static const std::map<std::string, Fn> t = {
      {"neg", [](auto& a) { return -a[0]; }},
      {"exp", [](auto& a) { return std::exp(a[0]); }},
      {"log", [](auto& a) { return std::log(a[0]); }},
      {"tanh", [](auto& a) { return std::tanh(a[0]); }},
      {"erf", [](auto& a) { return std::erf(a[0]); }},
      {"rsqrt", [](auto& a) { return 1.0f / std::sqrt(a[0]); }},
      {"sqrt", [](auto& a) { return std::sqrt(a[0]); }},
      {"sigmoid", [](auto& a) { return 1.0f / (1.0f + std::exp(-a[0])); }},
      {"relu", [](auto& a) { return a[0] > 0 ? a[0] : 0.0f; }},
      {"abs", [](auto& a) { return std::fabs(a[0]); }},
      {"reciprocal", [](auto& a) { return 1.0f / a[0]; }},
      {"to_dtype", [](auto& a) { return a[0]; }},
      {"add", [](auto& a) { return a[0] + a[1]; }},
      {"sub", [](auto& a) { return a[0] - a[1]; }},
      {"mul", [](auto& a) { return a[0] * a[1]; }},
      {"div", [](auto& a) { return a[0] / a[1]; }},
      {"maximum", [](auto& a) { return std::max(a[0], a[1]); }},
      {"minimum", [](auto& a) { return std::min(a[0], a[1]); }},
      {"pow", [](auto& a) { return std::pow(a[0], a[1]); }},
      {"lt", [](auto& a) { return a[0] < a[1] ? 1.0f : 0.0f; }},
      {"le", [](auto& a) { return a[0] <= a[1] ? 1.0f : 0.0f; }},
      {"gt", [](auto& a) { return a[0] > a[1] ? 1.0f : 0.0f; }},
      {"ge", [](auto& a) { return a[0] >= a[1] ? 1.0f : 0.0f; }},
      {"eq", [](auto& a) { return a[0] == a[1] ? 1.0f : 0.0f; }},
      {"ne", [](auto& a) { return a[0] != a[1] ? 1.0f : 0.0f; }},
      {"where", [](auto& a) { return a[0] != 0 ? a[1] : a[2]; }},
  };
  return t;
}

}  // namespace

std::vector<Tensor> run_reference(const Graph& g, const TensorMap& inputs) {
  std::vector<Tensor> vals(g.size());
  for (const Node& n : g.nodes()) {
    std::vector<const Tensor*> in;
    for (NodeId i : n.inputs) in.push_back(&vals[static_cast<size_t>(i)]);
    Tensor& out = vals[static_cast<size_t>(n.id)];
    switch (n.kind) {
      case NodeKind::Placeholder:
      case NodeKind::Parameter: {
        auto it = inputs.find(n.name);
        if (it == inputs.end()) throw InputError(strcat("reference: no data for input %", n.name));
        if (it->second.type.shape != n.type.shape)
          throw InputError(strcat("reference: data for %", n.name, " has shape ", shape_str(it->second.type.shape),
                                  ", expected ", shape_str(n.type.shape)));
        out = it->second;
        break;
      }
      case NodeKind::Output: break;
      case NodeKind::Call: {
        const OpInfo* info = find_op(n.op);
        if (!info) throw InputError(strcat("node %", n.name, ": unknown op '", n.op, "'"));
        if (info->category == OpCategory::Constant) {
          out = Tensor(n.type);
          std::fill(out.data.begin(), out.data.end(), static_cast<float>(n.attr_float("value", 0)));
        } else if (info->category == OpCategory::Reduction) {
          out = reduce(n, *in[0]);
        } else if (info->category == OpCategory::Matmul) {
          out = matmul(n, *in[0], *in[1]);
        } else if (info->category == OpCategory::View || info->category == OpCategory::Concat ||
                   info->category == OpCategory::Gather) {
          out = view_op(n, in);
        } else if (auto it = pointwise_table().find(n.op); it != pointwise_table().end()) {
          out = map_n(n, in, it->second);
        } else {
          throw InputError(strcat("node %", n.name, ": op '", n.op, "' is not a core op; run decompose first"));
        }
        break;
      }
    }
  }
  std::vector<Tensor> results;
  for (NodeId o : g.outputs()) results.push_back(vals[static_cast<size_t>(o)]);
  return results;
}

TensorMap make_random_inputs(const Graph& g, uint64_t seed) {
  TensorMap m;
  for (const Node& n : g.nodes())
    if (n.kind == NodeKind::Placeholder || n.kind == NodeKind::Parameter)
      m[n.name] = random_tensor(n.type, seed + static_cast<uint64_t>(n.id) * 7919);
  return m;
}

}  // namespace lpu
