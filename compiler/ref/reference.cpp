#include "ref/reference.h"
#include "ref/quantise.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "graph/collective.h"
#include "graph/ops.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"
#include "ref/host_ops.h"
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
  ReductionType type;
  if (!graph_reduction_type(n.op, type)) throw InternalError(strcat("reference: '", n.op, "' is no reduction"));
  std::vector<Reducer> acc(static_cast<size_t>(out_n), Reducer(type));
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t lin = 0; lin < x.numel(); ++lin) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!red[d]) o += idx[d] * kst[d];
    acc[static_cast<size_t>(o)].add(x.data[static_cast<size_t>(lin)]);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  Tensor out(n.type);
  for (int64_t i = 0; i < out_n; ++i) out.data[static_cast<size_t>(i)] = static_cast<float>(acc[static_cast<size_t>(i)].result());
  return out;
}

// torch.matmul (see graph/ops.cpp for the accepted forms), double accumulation.
Tensor matmul(const Node& n, const Tensor& a, const Tensor& b) {
  const Shape& bs = b.type.shape;
  Shape as = a.type.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);  // [K] -> [1, K]; the result drops the M dim
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape batch(n.type.shape.begin(), n.type.shape.end() - (a.type.rank() == 1 ? 1 : 2));
  // Batch offsets of a and b for each batch index of the result (broadcast dims stride 0).
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Broadcaster abc(a_batch, batch), bbc(b_batch, batch);
  Tensor out(n.type);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ao += idx[d] * abc.strides[d];
      bo += idx[d] * bbc.strides[d];
    }
    const float* A = a.data.data() + ao * M * K;
    const float* B = b.data.data() + bo * K * N;
    float* C = out.data.data() + bi * M * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[m * K + k]) * B[k * N + j];
        C[m * N + j] = static_cast<float>(acc);
      }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Calls `f(out_linear_index, out_multi_index)` for every element of `shape`, in row-major order.
template <typename F>
void for_each_index(const Shape& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t lin = 0; lin < numel(shape); ++lin) {
    f(lin, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

Tensor permute(const Node& n, const Tensor& x) {
  auto dims = n.attr_ints("dims");
  auto st = contiguous_strides(x.type.shape);
  Tensor out(n.type);
  for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * st[static_cast<size_t>(normalize_dim(dims[i], x.type.rank(), n))];
    out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(off)];
  });
  return out;
}

Tensor expand(const Node& n, const Tensor& x) {
  Broadcaster bc(x.type.shape, n.type.shape);
  Tensor out(n.type);
  for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * bc.strides[d];
    out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(off)];
  });
  return out;
}

Tensor slice(const Node& n, const Tensor& x) {
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim"), x.type.rank(), n));
  SliceRange r = slice_range(n, x.type.shape[d]);
  auto st = contiguous_strides(x.type.shape);
  Tensor out(n.type);
  for_each_index(n.type.shape, [&](int64_t lin, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t k = 0; k < idx.size(); ++k) off += (k == d ? r.start + idx[k] * r.step : idx[k]) * st[k];
    out.data[static_cast<size_t>(lin)] = x.data[static_cast<size_t>(off)];
  });
  return out;
}

Tensor cat(const Node& n, const std::vector<const Tensor*>& in) {
  auto d = static_cast<size_t>(normalize_dim(n.attr_int("dim"), n.type.rank(), n));
  // Row-major: the result is `outer` blocks, each the concatenation of every input's block.
  int64_t outer = 1;
  for (size_t k = 0; k < d; ++k) outer *= n.type.shape[k];
  Tensor out(n.type);
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor* t : in) {
      auto block = static_cast<size_t>(t->numel() / outer);
      std::copy_n(t->data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(o) * block), block,
                  out.data.begin() + static_cast<std::ptrdiff_t>(pos));
      pos += block;
    }
  return out;
}

Tensor embedding(const Node& n, const Tensor& w, const Tensor& idx) {
  int64_t V = w.type.shape[0], D = w.type.shape[1];
  Tensor out(n.type);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    float v = idx.data[static_cast<size_t>(i)];
    auto row = static_cast<int64_t>(v);
    if (static_cast<float>(row) != v || row < 0 || row >= V)
      throw InputError(strcat("node %", n.name, " (embedding): index ", v, " at position ", i,
                              " is out of range for ", V, " rows"));
    std::copy_n(w.data.begin() + row * D, D, out.data.begin() + i * D);
  }
  return out;
}

// to_dtype with the target's rounding: integers truncate toward zero, bool is `!= 0`,
// f16/bf16 round to nearest even (values stay stored as float).
float convert(float v, DType to) {
  switch (to) {
    case DType::f32: return v;
    case DType::f16: return round_to_dtype(v, DType::f16);
    case DType::bf16: return round_to_dtype(v, DType::bf16);
    case DType::i64:
    case DType::i32: return std::trunc(v);
    case DType::boolean: return v != 0 ? 1.0f : 0.0f;
  }
  return v;
}

}  // namespace

namespace {
// One node of one graph on its operands (`inputs`: the graph's input data).
Tensor eval_node(const Node& n, const std::vector<const Tensor*>& in, const TensorMap& inputs) {
  Tensor out;
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
      } else if (info->host()) {
        out = host_ops::evaluate(n, in);
      } else if (info->category == OpCategory::Reduction) {
        out = reduce(n, *in[0]);
      } else if (info->category == OpCategory::Matmul) {
        out = matmul(n, *in[0], *in[1]);
      } else if (n.op == "to_dtype") {
        DType to = n.type.dtype;
        out = map_n(n, in, [to](const std::vector<float>& a) { return convert(a[0], to); });
      } else if (n.op == "reshape") {
        out = Tensor(n.type);
        out.data = in[0]->data;
      } else if (n.op == "permute") {
        out = permute(n, *in[0]);
      } else if (n.op == "expand") {
        out = expand(n, *in[0]);
      } else if (n.op == "slice") {
        out = slice(n, *in[0]);
      } else if (n.op == "cat") {
        out = cat(n, in);
      } else if (n.op == "embedding") {
        out = embedding(n, *in[0], *in[1]);
      } else if (ScalarOp op; parse_scalar_op(n.op, op)) {  // the op table's semantics
        out = map_n(n, in, [op](const std::vector<float>& a) { return eval_scalar_op(op, a.data()); });
      } else {
        throw InputError(strcat("node %", n.name, ": op '", n.op, "' is not a core op; run decompose first"));
      }
      break;
    }
  }
  return out;
}
}  // namespace

namespace {

// The ranks' graphs stepped together, node by node: every node but a collective is evaluated
// on its own rank; a collective (the same op at the same place in every rank's graph) combines
// the ranks' operands (graph/collective.h). One graph is the plain reference.
std::vector<std::vector<Tensor>> run_ranks(const std::vector<const Graph*>& gs, const std::vector<const TensorMap*>& ins) {
  const size_t R = gs.size();
  for (size_t r = 1; r < R; ++r)
    if (gs[r]->size() != gs[0]->size())
      throw InputError(strcat("reference: rank ", r, "'s graph has ", gs[r]->size(), " nodes, rank 0's ", gs[0]->size(),
                              " (the ranks of a partitioned graph have the same nodes)"));
  std::vector<std::vector<Tensor>> vals(R, std::vector<Tensor>(gs[0]->size()));
  for (size_t id = 0; id < gs[0]->size(); ++id) {
    const Node& n0 = gs[0]->nodes()[id];
    if (n0.kind == NodeKind::Call && is_collective_op(n0.op)) {
      std::vector<const Tensor*> operands;
      for (size_t r = 0; r < R; ++r) {
        const Node& n = gs[r]->nodes()[id];
        if (n.op != n0.op)
          throw InputError(strcat("reference: node %", n0.name, " is ", n0.op, " on rank 0 but ", n.op, " on rank ", r));
        operands.push_back(&vals[r][static_cast<size_t>(n.inputs.at(0))]);
      }
      if (R == 1 && collective_attrs(n0, operands[0]->type.shape).group != 1)
        throw InputError(strcat("reference: node %", n0.name, " (", n0.op,
                                ") combines the ranks of a partitioned graph: run every rank's graph together "
                                "(run_reference_ranks)"));
      Tensor result = collective_evaluate(n0, operands);  // the same on every rank
      for (size_t r = 0; r < R; ++r) vals[r][id] = result;
      continue;
    }
    for (size_t r = 0; r < R; ++r) {
      const Graph& g = *gs[r];
      const TensorMap& inputs = *ins[r];
      std::vector<Tensor>& v = vals[r];
      const Node& n = g.nodes()[id];
      std::vector<const Tensor*> in;
      for (NodeId i : n.inputs) in.push_back(&v[static_cast<size_t>(i)]);
      v[id] = eval_node(n, in, inputs);
    }
  }
  std::vector<std::vector<Tensor>> results(R);
  for (size_t r = 0; r < R; ++r)
    for (NodeId o : gs[r]->outputs()) results[r].push_back(vals[r][static_cast<size_t>(o)]);
  return results;
}

}  // namespace

std::vector<Tensor> run_reference(const Graph& g, const TensorMap& inputs) { return run_ranks({&g}, {&inputs})[0]; }

std::vector<std::vector<Tensor>> run_reference_ranks(const std::vector<Graph>& ranks, const std::vector<TensorMap>& inputs) {
  if (ranks.empty() || inputs.size() != ranks.size())
    throw InputError(strcat("reference: ", ranks.size(), " rank graphs with ", inputs.size(), " input sets"));
  std::vector<const Graph*> gs;
  std::vector<const TensorMap*> ins;
  for (size_t r = 0; r < ranks.size(); ++r) {
    gs.push_back(&ranks[r]);
    ins.push_back(&inputs[r]);
  }
  return run_ranks(gs, ins);
}

float random_input_scale(const Node& n) {
  if (n.kind != NodeKind::Parameter || n.type.rank() != 2 || !is_floating(n.type.dtype)) return 1.0f;
  return 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(n.type.shape[0], 1)));
}

TensorMap make_random_inputs(const Graph& g, uint64_t seed) {
  TensorMap m;
  for (const Node& n : g.nodes())
    if (n.kind == NodeKind::Placeholder || n.kind == NodeKind::Parameter) {
      Tensor t = random_tensor(n.type, seed + static_cast<uint64_t>(n.id) * 7919);
      if (float scale = random_input_scale(n); scale != 1.0f)
        for (auto& v : t.data) v = round_to_dtype(v * scale, n.type.dtype);
      // A packed weight holds code x scale: the values the simulator's SXE dequantises.
      if (const Quant q = parameter_quant(n); q.on()) fake_quantise(t.data, q);
      m[n.name] = std::move(t);
    }
  return m;
}

}  // namespace lpu
