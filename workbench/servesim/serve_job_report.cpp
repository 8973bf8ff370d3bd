// ServeJobResult as JSON and as the terminal report.
#include <algorithm>
#include <sstream>

#include "serve/result_io.h"
#include "servesim/serve_job.h"
#include "support/error.h"
#include "support/units.h"

namespace lpu {

namespace {
using Json = nlohmann::ordered_json;

Json deployment_json(const Deployment& d, const serve::SchedulerConfig& sc) {
  return Json{{"model", d.model},
              {"devices_per_replica", d.devices},
              {"max_position", d.max_position},
              {"hbm_bytes_per_device", d.hbm_bytes_per_device},
              {"weight_bytes_per_device", d.weight_bytes},
              {"activation_bytes_per_device", d.activation_bytes},
              {"kv_bytes_per_token_per_device", d.kv_bytes_per_token},
              {"kv_capacity_tokens", d.kv_capacity_tokens},
              {"kv_capacity_blocks", sc.kv_capacity_blocks}};
}

Json capacity_json(const serve::CapacityResult& c) {
  Json probes = Json::array();
  for (const auto& p : c.probes)
    probes.push_back(Json{{"rate", p.rate},
                          {"ttft_p99_s", p.ttft_p99_s},
                          {"tpot_p99_s", p.tpot_p99_s},
                          {"meets", p.meets},
                          {"truncated", p.truncated}});
  return Json{{"found", c.found}, {"max_rate", c.max_rate}, {"probes", probes}};
}

Json programs_json(size_t compiles, const SymbolicCounters& n) {
  return Json{{"compiles", compiles},
              {"templates", n.templates},
              {"instantiated", n.instantiated},
              {"guard_extensions", n.guard_extensions},
              {"guard_failures", n.guard_failures}};
}

std::string ms(double s) { return format_number("%.2f ms", s * 1e3); }
std::string num(const char* f, double v) { return format_number(f, v); }
}  // namespace

nlohmann::ordered_json ServeJobResult::to_json(bool with_wall, bool with_steps) const {
  Json j;
  j["kind"] = "serve";
  j["workload"] = workload.name;
  j["arch"] = arch.name;
  j["deployment"] = deployment_json(deployment, cluster.pool.scheduler);
  j["cost_model"] = Json{{"kind", exact ? "exact" : "fitted"}};
  if (exact)  // deterministic for an exact run (a fitted one's depend on its memo: under "wall")
    j["cost_model"]["programs"] = programs_json(compiles, symbolic);
  if (!prefill_gpu.empty()) j["prefill_gpu"] = prefill_gpu;
  if (!exact)
    j["step_cost_error"] =
        Json{{"samples", error.samples}, {"p50", error.p50}, {"max", error.max}, {"energy_max", error.energy_max}};
  j["cluster"] = serve::cluster_json(cluster);
  if (capacity) j["capacity"] = capacity_json(*capacity);
  Json run = serve::result_json(result, with_steps);
  for (auto it = run.begin(); it != run.end(); ++it) j[it.key()] = std::move(*it);
  if (!with_wall) return j;
  j["wall"] = Json{{"total_s", wall_s},
                   {"serving_s", model_wall_s},
                   {"error_check_s", error_wall_s},
                   {"points_simulated", points_simulated},
                   {"points_loaded", points_loaded},
                   {"programs", programs_json(compiles, symbolic)},
                   {"simulated_s_per_wall_s", wall_s > 0 ? result.summary.duration_s / wall_s : 0.0}};
  return j;
}

std::string ServeJobResult::summary() const {
  const serve::ServeSummary& s = result.summary;
  std::ostringstream o;
  o << "serve " << workload.name << " on " << arch.name << " (" << deployment.devices << " device(s) per replica, "
    << cluster.pool.replicas
    << (cluster.disaggregated ? " prefill + " + std::to_string(cluster.decode_pool.replicas) + " decode" : "")
    << " replica(s)" << (prefill_gpu.empty() ? "" : strcat(", prefill on ", prefill_gpu)) << ")\n";
  o << "  KV cache: " << deployment.kv_capacity_tokens << " tokens per replica ("
    << format_bytes(deployment.weight_bytes) << " of weights per device)\n";
  o << "  requests: " << s.completed << "/" << s.requests << " completed in " << num("%.3f", s.duration_s)
    << " s simulated; " << num("%.3f", s.requests_per_s) << " req/s, " << num("%.1f", s.output_tokens_per_s)
    << " tokens/s\n";
  o << "  TTFT p50/p90/p99: " << ms(s.ttft_s.p50) << " / " << ms(s.ttft_s.p90) << " / " << ms(s.ttft_s.p99) << "\n";
  o << "  TPOT p50/p90/p99: " << ms(s.tpot_s.p50) << " / " << ms(s.tpot_s.p90) << " / " << ms(s.tpot_s.p99) << "\n";
  o << "  SLO (TTFT <= " << s.slo_ttft_ms << " ms, TPOT <= " << s.slo_tpot_ms << " ms): " << s.slo_met
    << " met, goodput " << num("%.3f", s.goodput_rps) << " req/s; preemptions " << s.preemptions << "; steps "
    << s.steps << "\n";
  // Far more offered than served: say what a newcomer can change (the default lpu-small cannot
  // keep up with the default rate on OPT-1.3B, and every figure above then measures a queue).
  auto [first, last] = std::minmax_element(requests.begin(), requests.end(), [](const auto& a, const auto& b) {
    return a.arrival_s < b.arrival_s;
  });
  if (requests.size() > 1 && last->arrival_s > first->arrival_s) {
    const double offered = static_cast<double>(requests.size() - 1) / (last->arrival_s - first->arrival_s);
    if (s.requests_per_s < 0.5 * offered)
      o << "  overloaded: requests arrived at " << num("%.3f", offered) << " req/s and were served at "
        << num("%.3f", s.requests_per_s)
        << " req/s; lower --rate, add replicas or devices, or take a larger architecture (--arch); --find-rate "
           "searches the highest rate that meets the SLOs\n";
  }
  if (s.energy_j > 0)
    o << "  energy: " << num("%.3f", s.energy_per_request_j) << " J/request, "
      << num("%.3f", s.energy_per_token_j * 1e3) << " mJ/token\n";
  if (capacity)
    o << "  capacity: "
      << (capacity->found ? strcat(num("%.3f", capacity->max_rate), " req/s meet the SLOs at p99")
                          : std::string("even the lowest rate probed misses the SLOs"))
      << " (" << capacity->probes.size() << " probes)\n";
  if (exact)
    o << "  step costs: every step simulated (--exact); programs: " << compiles << " compiles, " << symbolic.templates
      << " symbolic templates, " << symbolic.instantiated << " steps instantiated from them, "
      << symbolic.guard_failures << " guard failures\n";
  else
    o << "  step costs: model from " << points_simulated + points_loaded << " simulated points (" << points_loaded
      << " from the memo); error against exact simulation on " << error.samples << " steps: p50 "
      << num("%.3f", error.p50 * 100) << "%, max " << num("%.3f", error.max * 100) << "%\n";
  if (result.truncated) o << "  TRUNCATED: " << result.truncation_reason << "\n";
  o << "  wall time " << num("%.2f", wall_s) << " s for " << num("%.2f", s.duration_s) << " s simulated ("
    << num("%.1f", wall_s > 0 ? s.duration_s / wall_s : 0) << "x real time)\n";
  return o.str();
}

}  // namespace lpu
