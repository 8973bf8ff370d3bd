// Capacity search: the highest arrival rate at which a cluster still meets its SLOs at the
// 99th percentile (p99 TTFT <= slo_ttft_ms and p99 TPOT <= slo_tpot_ms, every request
// completed, the run not truncated). Each probe regenerates the trace at its rate with the
// same seed, so lengths are identical across probes and only the arrival times scale
// (serve/generator.h); bisection then assumes what the probes record: meeting the SLOs at a
// rate implies meeting them at every lower one.
#pragma once
#include <vector>

#include "serve/cluster.h"
#include "serve/generator.h"

namespace lpu::serve {

struct CapacitySearch {
  double low_rate = 0.1;  // req/s; must meet the SLOs, or there is no capacity to report
  double high_rate = 10;  // first upper probe; doubled (at most 12 times) until it fails
  int bisections = 12;
  double rel_tolerance = 0.01;  // stop when (high - low) / high is below this
};

struct CapacityProbe {
  double rate = 0;
  double ttft_p99_s = 0, tpot_p99_s = 0;
  bool meets = false, truncated = false;
};

struct CapacityResult {
  bool found = false;                 // low_rate met the SLOs
  double max_rate = 0;                // the highest probed rate that met them
  std::vector<CapacityProbe> probes;  // in the order they ran
};

CapacityResult find_max_rate(const GeneratorSpec& trace, const ClusterConfig& cluster, const CapacitySearch& search);

}  // namespace lpu::serve
