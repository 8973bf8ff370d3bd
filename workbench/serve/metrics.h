// The summary of a serving run, from its own records (definitions in docs/serving.md):
// percentiles are over requests (TPOT is each request's mean gap, so p99 TPOT is the 99th
// percentile of per-request means), linearly interpolated between order statistics (numpy's
// default); latencies count completed requests only; a request meets the SLO when its TTFT and
// its TPOT are both within the targets.
#pragma once
#include <vector>

#include "serve/cluster.h"
#include "serve/result.h"

namespace lpu::serve {

Distribution distribution(std::vector<double> values);

// Fills result->summary. `end_s` is when the run stopped (its last event); `in_system_area` is
// the integral over time of the number of requests in the system, from the simulation's clock.
void summarize(ServeResult* result, const Slo& slo, double end_s, double in_system_area);

}  // namespace lpu::serve
