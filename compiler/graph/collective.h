// Collective ops: what tensor parallelism (docs/tensor-parallel.md) puts between the ranks of
// a partitioned graph. Each rank runs its own graph; a collective node is where the ranks
// exchange data over the ESL. Core ops of category Collective, with reference semantics over
// all ranks at once (collective_evaluate; run_reference_ranks in ref/reference.h steps the
// ranks' graphs together), lowered to a loop-IR node of its own and coded as esl.send + sync
// (codegen/collective.h).
//   all_reduce(x) {group, rank}        every rank gets the sum of the ranks' x (same shape)
//   all_gather(x) {dim, rank, sizes}   every rank gets the ranks' x concatenated along dim;
//                                      sizes[r] is rank r's extent of dim (group = sizes.size())
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

struct OpInfo;

bool is_collective_op(const std::string& op);

// A collective node's attributes, checked: group >= 1, 0 <= rank < group, for all_gather a
// dim of the input and sizes that give the input's extent at `rank`.
struct CollectiveAttrs {
  int64_t group = 1, rank = 0;
  int64_t dim = 0;                  // all_gather
  std::vector<int64_t> sizes;       // all_gather: every rank's extent of dim
  int64_t offset(int64_t r) const;  // all_gather: where rank r's part starts along dim
};
CollectiveAttrs collective_attrs(const Node& n, const Shape& input);

std::vector<OpInfo> collective_op_registry();  // the Collective entries of the op registry

// The collective's result on every rank from the ranks' inputs (inputs[r] is rank r's
// operand): all_reduce sums in rank order, so every rank gets bit-identical values.
Tensor collective_evaluate(const Node& n, const std::vector<const Tensor*>& inputs);

}  // namespace lpu
