// A serving step (serve::StepBatch) as the compiler's step workload: one sequence is the
// lockstep step `lpu generate` compiles (so a request alone costs exactly what its generation
// does), several a ragged step (WorkloadSpec::ragged).
#pragma once
#include "serve/step_cost.h"
#include "workload/workload.h"

namespace lpu {

// `base` is the served model's workload (a built-in decoder); its batch must be 1.
WorkloadSpec step_workload_of(const WorkloadSpec& base, const serve::StepBatch& batch);

}  // namespace lpu
