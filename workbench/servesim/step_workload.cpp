#include "servesim/step_workload.h"

#include "support/error.h"

namespace lpu {

WorkloadSpec step_workload_of(const WorkloadSpec& base, const serve::StepBatch& batch) {
  if (batch.seqs.empty()) throw InternalError("step_workload_of: an empty step");
  WorkloadSpec s = base;
  s.batch = 1;
  s.ragged.clear();
  if (batch.seqs.size() == 1) {
    // As generate.cpp's step_workload: the prefill of a prompt, or a step on a cached context.
    const serve::SeqWork& q = batch.seqs.front();
    s.phase = q.context_before == 0 ? "prefill" : "decode";  // a later chunk: tokens on a cached prefix
    s.seq_len = q.new_tokens;
    s.context = q.context_before;
    return s;
  }
  s.phase = "decode";
  s.seq_len = 1;
  s.context = 0;
  for (const serve::SeqWork& q : batch.seqs) s.ragged.push_back({q.context_before, q.new_tokens});
  return s;
}

}  // namespace lpu
