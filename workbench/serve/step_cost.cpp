#include "serve/step_cost.h"

namespace lpu::serve {

int64_t StepBatch::total_tokens() const {
  int64_t n = 0;
  for (const SeqWork& s : seqs) n += s.new_tokens;
  return n;
}

StepCostModel::~StepCostModel() = default;

}  // namespace lpu::serve
