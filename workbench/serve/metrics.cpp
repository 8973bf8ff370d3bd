#include "serve/metrics.h"

#include <algorithm>
#include <cmath>

namespace lpu::serve {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

bool meets_slo(const RequestRecord& r, const Slo& slo) {
  return r.completed() && r.ttft_s() * 1e3 <= slo.ttft_ms && r.tpot_s() * 1e3 <= slo.tpot_ms;
}
}  // namespace

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = static_cast<int64_t>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  d.p50 = quantile(values, 0.50);
  d.p90 = quantile(values, 0.90);
  d.p99 = quantile(values, 0.99);
  d.max = values.back();
  return d;
}

void summarize(ServeResult* result, const Slo& slo, double end_s, double in_system_area) {
  ServeSummary& s = result->summary;
  s = ServeSummary{};
  std::vector<double> queueing, ttft, tpot, e2e;
  int64_t tokens = 0;
  double first_arrival = result->requests.empty() ? 0 : result->requests.front().arrival_s;
  for (const RequestRecord& r : result->requests) {
    first_arrival = std::min(first_arrival, r.arrival_s);
    s.preemptions += r.preemptions;
    s.energy_j += r.energy_j;
    tokens += r.tokens_generated;
    if (!r.completed()) continue;
    ++s.completed;
    queueing.push_back(r.queueing_s());
    ttft.push_back(r.ttft_s());
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s());  // a one-token request has no gaps
    e2e.push_back(r.e2e_s());
    if (meets_slo(r, slo)) ++s.slo_met;
  }
  s.requests = static_cast<int64_t>(result->requests.size());
  s.duration_s = std::max(0.0, end_s - first_arrival);
  double per_s = s.duration_s > 0 ? 1 / s.duration_s : 0;
  s.requests_per_s = s.completed * per_s;
  s.output_tokens_per_s = tokens * per_s;
  s.queueing_s = distribution(queueing);
  s.ttft_s = distribution(ttft);
  s.tpot_s = distribution(tpot);
  s.e2e_s = distribution(e2e);
  s.slo_ttft_ms = slo.ttft_ms;
  s.slo_tpot_ms = slo.tpot_ms;
  s.slo_attainment = s.requests > 0 ? static_cast<double>(s.slo_met) / s.requests : 0;
  s.goodput_rps = s.slo_met * per_s;
  for (const ReplicaSeries& rs : result->replicas) s.steps += rs.steps;
  s.energy_per_request_j = s.completed > 0 ? s.energy_j / s.completed : 0;
  s.energy_per_token_j = tokens > 0 ? s.energy_j / tokens : 0;
  s.mean_in_system = in_system_area * per_s;
}

}  // namespace lpu::serve
