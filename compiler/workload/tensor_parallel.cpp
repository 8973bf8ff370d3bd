#include "workload/tensor_parallel.h"

#include "support/error.h"
#include "workload/transformer.h"

namespace lpu {

std::vector<Graph> build_rank_graphs(const WorkloadSpec& w, int64_t devices) {
  const TransformerShape* m = decoder_of(w);
  if (!m)
    throw InputError(
        strcat("workload ", w.name, ": devices = ", devices,
               " partitions the built-in decoders only (opt-*, llama2-*, gpt2, tiny-*; lpu list workloads); ",
               w.graph.empty() ? "model " + w.model : "graph file " + w.graph, " runs on one device (set devices: 1)"));
  std::vector<Graph> ranks;
  for (int64_t r = 0; r < devices; ++r) {
    WorkloadSpec s = w;
    s.tp = devices;
    s.tp_rank = r;
    ranks.push_back(build_graph(s));
  }
  return ranks;
}

TensorMap slice_rank_inputs(const Graph& whole, const TensorMap& whole_inputs, const Graph& rank_graph, int64_t rank,
                            int64_t devices) {
  std::map<std::string, const Node*> by_name;
  for (const Node& n : whole.nodes())
    if (n.kind == NodeKind::Placeholder || n.kind == NodeKind::Parameter) by_name[n.name] = &n;
  TensorMap out;
  for (const Node& n : rank_graph.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    auto it = by_name.find(n.name);
    auto data = whole_inputs.find(n.name);
    if (it == by_name.end() || data == whole_inputs.end())
      throw InputError(
          strcat("tensor parallelism: rank ", rank, "'s input %", n.name, " is not an input of the whole model"));
    const Shape& full = it->second->type.shape;
    const Shape& part = n.type.shape;
    if (full.size() != part.size())
      throw InternalError(strcat("tensor parallelism: %", n.name, " is ", shape_str(part), " on rank ", rank, " but ",
                                 shape_str(full), " in the whole model"));
    int64_t dim = -1;
    for (size_t d = 0; d < full.size(); ++d)
      if (full[d] != part[d]) {
        if (dim >= 0)
          throw InternalError(strcat("tensor parallelism: %", n.name, " is split in two dims (", shape_str(part),
                                     " of ", shape_str(full), ")"));
        dim = static_cast<int64_t>(d);
      }
    if (dim < 0) {
      out[n.name] = data->second;
      continue;
    }
    const size_t D = static_cast<size_t>(dim);
    const int64_t lo = rank * full[D] / devices, hi = (rank + 1) * full[D] / devices;
    if (hi - lo != part[D])
      throw InternalError(strcat("tensor parallelism: %", n.name, " has ", part[D], " of ", full[D], " along dim ", dim,
                                 " on rank ", rank, " of ", devices, "; expected ", hi - lo));
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < D; ++d) outer *= full[d];
    for (size_t d = D + 1; d < full.size(); ++d) inner *= full[d];
    Tensor t(n.type);
    const Tensor& src = data->second;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < part[D] * inner; ++j)
        t.data[static_cast<size_t>(o * part[D] * inner + j)] =
            src.data[static_cast<size_t>((o * full[D] + lo) * inner + j)];
    out[n.name] = std::move(t);
  }
  return out;
}

TensorMap join_rank_outputs(const std::vector<std::string>& names, const std::vector<TensorType>& whole,
                            const std::vector<TensorMap>& per_rank) {
  const int64_t N = static_cast<int64_t>(per_rank.size());
  TensorMap out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const Shape& full = whole.at(i).shape;
    std::vector<const Tensor*> parts;
    for (const auto& m : per_rank) {
      auto it = m.find(name);
      if (it == m.end()) throw InternalError(strcat("tensor parallelism: a rank has no output ", name));
      parts.push_back(&it->second);
    }
    const Shape& part = parts[0]->type.shape;
    int64_t dim = -1;
    for (size_t d = 0; d < full.size() && d < part.size(); ++d)
      if (full[d] != part[d]) dim = static_cast<int64_t>(d);
    if (dim < 0) {
      out[name] = *parts[0];
      continue;
    }
    const size_t D = static_cast<size_t>(dim);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < D; ++d) outer *= full[d];
    for (size_t d = D + 1; d < full.size(); ++d) inner *= full[d];
    Tensor t(whole.at(i));
    for (int64_t r = 0; r < N; ++r) {
      const int64_t lo = r * full[D] / N, w = (r + 1) * full[D] / N - lo;
      const Tensor& p = *parts[static_cast<size_t>(r)];
      if (p.numel() != outer * w * inner)
        throw InternalError(strcat("tensor parallelism: rank ", r, "'s ", name, " has ", p.numel(), " elements"));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < w * inner; ++j)
          t.data[static_cast<size_t>((o * full[D] + lo) * inner + j)] = p.data[static_cast<size_t>(o * w * inner + j)];
    }
    out[name] = std::move(t);
  }
  return out;
}

}  // namespace lpu
