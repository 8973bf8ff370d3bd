// The reference executor: a plain graph interpreter over core ops (fp32 arithmetic, double
// accumulation in reductions). It is the numerical ground truth for the loop IR, the
// generated code and the simulator's functional mode.
#pragma once
#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

// `inputs` holds a tensor for every placeholder and parameter, by node name.
// Returns the graph outputs in order. Throws InputError for missing inputs or non-core ops.
std::vector<Tensor> run_reference(const Graph& g, const TensorMap& inputs);
// The ranks of a partitioned graph (tensor parallelism) run together: ranks[r] on inputs[r],
// their collectives combining the ranks' operands (graph/collective.h). Returns each rank's
// outputs. A collective over more than one rank needs this (run_reference refuses it).
std::vector<std::vector<Tensor>> run_reference_ranks(const std::vector<Graph>& ranks, const std::vector<TensorMap>& inputs);

// Random inputs for every placeholder and parameter (seeded per node index).
// Random inputs for a graph without data (functional runs of built-in workloads): every value
// uniform in [-1, 1) from ref/tensor.cpp's LCG (seeded by `seed` and the node id), rounded to
// what its dtype holds; a 2-D floating parameter (a weight [K, N], an embedding table) is scaled
// by random_input_scale, 1/sqrt(K), as trained weights are: with unit-range weights a deep fp16
// model saturates its softmaxes, and where two roundings differ (fused kernels keep fp32
// intermediates) its outputs diverge, which says nothing about the compiler. A parameter stored
// quantised (parameter_quant) gets the values its packing holds (ref/quantise.h).
TensorMap make_random_inputs(const Graph& g, uint64_t seed);
float random_input_scale(const Node& n);

}  // namespace lpu
