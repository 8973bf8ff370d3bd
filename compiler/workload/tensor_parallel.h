// Tensor parallelism over the ESL (docs/tensor-parallel.md): a built-in decoder's step split
// over `devices` LPUs. Each rank's graph comes from the builder (build_transformer with
// WorkloadSpec::tp / tp_rank): column-parallel Q/K/V and up/gate projections, attention by
// heads (by KV groups for GQA), row-parallel output and down projections followed by an
// all_reduce, the LM head split by vocabulary followed by an all_gather (graph/collective.h).
#pragma once
#include <vector>

#include "graph/graph.h"
#include "ref/tensor.h"
#include "workload/workload.h"

namespace lpu {

// Every rank's graph, rank 0 first. InputError when the workload is not a built-in decoder
// (naming the workload) or `devices` does not divide heads, kv_heads or ffn (naming the key).
std::vector<Graph> build_rank_graphs(const WorkloadSpec& w, int64_t devices);

// Rank `rank`'s inputs and weights as slices of the whole model's: an input whose shape on the
// rank differs from the whole graph's in one dim D holds [rank*F/N, (rank+1)*F/N) of it along
// D (F the whole extent; the builder splits every partitioned dim so); equal shapes are copied.
TensorMap slice_rank_inputs(const Graph& whole, const TensorMap& whole_inputs, const Graph& rank_graph, int64_t rank,
                            int64_t devices);

// The whole model's outputs from every rank's (per_rank[r]): an output split across the ranks
// (the new keys and values, by heads) is put together by the slicing rule above; one every
// rank holds whole (the logits, after the all_gather) is rank 0's.
// names[i] is whole output i (of type whole[i]) as the programs name it.
TensorMap join_rank_outputs(const std::vector<std::string>& names, const std::vector<TensorType>& whole,
                            const std::vector<TensorMap>& per_rank);

}  // namespace lpu
