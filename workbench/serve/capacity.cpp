#include "serve/capacity.h"

#include <cmath>

#include "support/error.h"

namespace lpu::serve {
namespace {

CapacityProbe probe(GeneratorSpec trace, const ClusterConfig& cluster, double rate) {
  trace.arrival.rate = rate;
  ServeResult r = simulate_serving(generate_requests(trace), cluster);
  CapacityProbe p;
  p.rate = rate;
  p.ttft_p99_s = r.summary.ttft_s.p99;
  p.tpot_p99_s = r.summary.tpot_s.p99;
  p.truncated = r.truncated;
  p.meets = !r.truncated && r.summary.completed == r.summary.requests && p.ttft_p99_s * 1e3 <= cluster.slo.ttft_ms &&
            p.tpot_p99_s * 1e3 <= cluster.slo.tpot_ms;
  return p;
}

}  // namespace

CapacityResult find_max_rate(const GeneratorSpec& trace, const ClusterConfig& cluster, const CapacitySearch& search) {
  if (!(search.low_rate > 0) || !(search.high_rate > search.low_rate) || !std::isfinite(search.high_rate))
    throw InputError(
        strcat("capacity search: expected 0 < low_rate < high_rate, got ", search.low_rate, " and ", search.high_rate));
  CapacityResult out;
  auto run = [&](double rate) {
    out.probes.push_back(probe(trace, cluster, rate));
    return out.probes.back().meets;
  };
  if (!run(search.low_rate)) return out;
  out.found = true;
  double lo = search.low_rate, hi = search.high_rate;
  // Find a failing upper bound first: the answer may lie above the first guess.
  for (int i = 0; run(hi); ++i) {
    lo = hi;
    if (i == 12) {
      out.max_rate = lo;
      return out;
    }
    hi *= 2;
  }
  for (int i = 0; i < search.bisections && (hi - lo) / hi > search.rel_tolerance; ++i) {
    double mid = 0.5 * (lo + hi);
    (run(mid) ? lo : hi) = mid;
  }
  out.max_rate = lo;
  return out;
}

}  // namespace lpu::serve
