// What the serving simulation asks of the machine: the time and energy of one step. A step is
// one forward pass over a ragged batch (decode tokens of sequences at different contexts plus
// prefill chunks). The serve layer never sees the compiler or the simulator: the caller plugs
// in a model built from them (or, in tests, a formula), so scheduling can be tested on its own.
#pragma once
#include <cstdint>
#include <vector>

namespace lpu::serve {

// One sequence's part of a step: `new_tokens` tokens computed on top of `context_before` tokens
// whose KV is already cached. A decode has new_tokens == 1; a prefill chunk any number.
struct SeqWork {
  int64_t request_id = 0;
  int64_t context_before = 0;
  int64_t new_tokens = 0;
  bool is_prefill = false;
};

struct StepBatch {
  std::vector<SeqWork> seqs;
  int64_t total_tokens() const;
};

struct StepCost {
  double time_s = 0;
  double energy_j = 0;
};

// Not const: a model may memoise or build itself on demand (the compiler-backed one does).
class StepCostModel {
 public:
  virtual ~StepCostModel();
  virtual StepCost cost(const StepBatch& batch) = 0;
};

}  // namespace lpu::serve
