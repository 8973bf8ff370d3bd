// A step-cost model for the serving tests: time = a + b * tokens + c * (sum of the sequences'
// cached contexts), energy = e * tokens. Simple enough to compute expected timings by hand,
// rich enough that decode steps get slower as contexts grow (as attention does).
#pragma once
#include "serve/cluster.h"

namespace lpu::serve::testing {

class LinearCost : public StepCostModel {
 public:
  LinearCost(double a = 1e-3, double b = 1e-5, double c = 1e-8, double e = 0.5) : a_(a), b_(b), c_(c), e_(e) {}
  StepCost cost(const StepBatch& batch) override {
    ++calls;
    double ctx = 0;
    for (const SeqWork& s : batch.seqs) ctx += static_cast<double>(s.context_before);
    double tokens = static_cast<double>(batch.total_tokens());
    return StepCost{a_ + b_ * tokens + c_ * ctx, e_ * tokens};
  }
  double time(double tokens, double ctx = 0) const { return a_ + b_ * tokens + c_ * ctx; }
  int64_t calls = 0;

 private:
  double a_, b_, c_, e_;
};

// One replica, no limit that matters: huge KV cache and budget.
inline ClusterConfig unbounded(StepCostModel* cost) {
  ClusterConfig c;
  c.pool.cost = cost;
  c.pool.scheduler.max_num_batched_tokens = 1 << 20;
  c.pool.scheduler.max_num_seqs = 1 << 20;
  c.pool.scheduler.chunked_prefill = false;
  c.pool.scheduler.kv_capacity_blocks = 1 << 30;
  return c;
}

}  // namespace lpu::serve::testing
