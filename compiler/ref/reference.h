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

// Random inputs for every placeholder and parameter (seeded per node index).
TensorMap make_random_inputs(const Graph& g, uint64_t seed);

}  // namespace lpu
