#include "servesim/deployment.h"

#include <algorithm>
#include <cmath>

#include "support/error.h"
#include "support/input_file.h"
#include "support/units.h"
#include "workload/tensor_parallel.h"
#include "workload/transformer.h"

namespace lpu {

Deployment plan_deployment(const WorkloadSpec& base, const ArchConfig& arch, int64_t max_step_tokens,
                           int64_t block_size) {
  const TransformerShape* m = decoder_of(base);
  if (!m)
    throw InputError(strcat("serve: workload ", base.name, " is not a built-in LLM (serving runs decoders)",
                            base.file.empty() ? "" : "; from " + base.file));
  Deployment d;
  d.model = m->name;
  d.devices = std::max<int64_t>(arch.devices, 1);
  d.max_position = m->max_position;
  d.hbm_bytes_per_device = arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0;
  // Device 0's graph of a one-token step: its parameters are what the device holds.
  WorkloadSpec one = base;
  one.batch = 1;
  one.seq_len = 1;
  one.context = 0;
  one.ragged.clear();
  const Graph g = d.devices > 1 ? build_rank_graphs(one, d.devices).front() : build_graph(one);
  for (const auto& node : g.nodes())
    if (node.kind == NodeKind::Parameter) d.weight_bytes += static_cast<double>(stored_bytes(node));
  const int64_t layers = base.layers > 0 ? std::min(base.layers, m->layers) : m->layers;
  const double elem = dtype_bytes(base.dtype);
  d.kv_bytes_per_token = static_cast<double>(layers * m->kv_cache_width(d.devices)) * elem;
  // The largest step's activations: its hidden rows, and the widest intermediate (the MLP's,
  // the scores', or the LM head's) twice over (an input and an output live at once).
  const double n = static_cast<double>(max_step_tokens);
  const double widest = static_cast<double>(std::max({m->ffn / d.devices, m->d_model * 3, m->vocab / d.devices}));
  d.activation_bytes = n * (static_cast<double>(m->d_model) + 2 * widest) * elem;
  const double left = d.hbm_bytes_per_device - d.weight_bytes - d.activation_bytes;
  d.kv_capacity_tokens = left > 0 ? static_cast<int64_t>(std::floor(left / d.kv_bytes_per_token)) : 0;
  if (d.kv_capacity_tokens < block_size) {
    const double need = d.weight_bytes * d.devices + d.activation_bytes + d.replica_kv_bytes_per_token() * block_size;
    throw InputError(strcat(
        "serve: ", m->name, " on ", arch.name, " x ", d.devices, " device(s) leaves no room for the KV cache: weights ",
        format_bytes(d.weight_bytes), " and activations ", format_bytes(d.activation_bytes), " per device of ",
        format_bytes(d.hbm_bytes_per_device), " (hbm.capacity_gib = ", arch.hbm.capacity_gib, "); about ",
        static_cast<int64_t>(std::ceil(need / d.hbm_bytes_per_device)), " devices would hold it (--tp N)"));
  }
  return d;
}

}  // namespace lpu
