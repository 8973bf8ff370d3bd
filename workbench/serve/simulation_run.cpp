// The event loop of the serving simulation, its watchdog, and the entry points of cluster.h.
#include <cmath>

#include "serve/metrics.h"
#include "serve/simulation.h"
#include "serve/validate.h"

namespace lpu::serve {

double LinkConfig::transfer_s(int64_t tokens) const {
  return static_cast<double>(tokens) * kv_bytes_per_token * 8 / (bandwidth_gbps * 1e9);
}

RouterKind parse_router(const std::string& text) {
  if (text == "round-robin") return RouterKind::RoundRobin;
  if (text == "least-outstanding-tokens") return RouterKind::LeastOutstandingTokens;
  throw InputError(strcat("router: '", text, "': expected round-robin or least-outstanding-tokens"));
}

void Simulation::truncate(const std::string& reason) {
  truncated_ = true;
  reason_ = reason;
}

// Plans and starts one replica's next step; false when the watchdog stops the run.
bool Simulation::start_step(int pool, int r) {
  if (steps_ >= config_.watchdog.max_steps) {
    truncate(strcat("stopped after max_steps = ", config_.watchdog.max_steps, " steps at ", now_, " s simulated, with ",
                    in_system_, " requests unfinished"));
    return false;
  }
  Replica& rep = pools_[pool][r];
  std::vector<int64_t> preempted;
  StepBatch batch = rep.plan_step(&preempted);
  for (int64_t req : preempted) ++records_[req].preemptions;
  if (batch.seqs.empty()) return true;  // waits for blocks held by KV transfers
  for (int64_t req : rep.planned_requests())
    if (records_[req].first_scheduled_s < 0) records_[req].first_scheduled_s = now_;
  StepCost cost = pool_config_[pool]->cost->cost(batch);
  // A step must take time, or the clock would stand still and the run never end.
  if (!(cost.time_s > 0) || !std::isfinite(cost.time_s) || !(cost.energy_j >= 0) || !std::isfinite(cost.energy_j))
    throw InputError(strcat("step-cost model: a step of ", batch.total_tokens(), " tokens took ", cost.time_s,
                            " s and ", cost.energy_j, " J; expected time > 0 and energy >= 0"));
  ReplicaSeries& s = series_[pool][r];
  ++s.steps, ++steps_;
  s.busy_s += cost.time_s;
  s.peak_kv_blocks = std::max(s.peak_kv_blocks, rep.kv().used());
  if (config_.record_steps) {
    StepSample sm{now_, cost.time_s,     static_cast<int64_t>(batch.seqs.size()), batch.total_tokens(),
                  0,    rep.kv().used(), static_cast<int64_t>(rep.waiting())};
    for (const SeqWork& w : batch.seqs) sm.prefill_tokens += w.is_prefill ? w.new_tokens : 0;
    s.samples.push_back(sm);
  }
  in_flight_[pool][r] = InFlight{std::move(batch), cost};
  push(Event{now_ + cost.time_s, Kind::StepDone, 0, pool, r, -1, -1, 0, 0});
  return true;
}

void Simulation::start_steps() {
  for (int p = 0; p < 2; ++p)
    for (size_t r = 0; r < pools_[p].size(); ++r) {
      Replica& rep = pools_[p][r];
      if (rep.busy() || !rep.has_work()) continue;
      if (!start_step(p, static_cast<int>(r))) return;
    }
}

ServeResult Simulation::run() {
  for (size_t i = 0; i < requests_.size(); ++i)
    push(Event{requests_[i].arrival_s, Kind::Arrival, 0, 0, 0, static_cast<int64_t>(i), -1, 0, 0});
  while (!events_.empty() && !truncated_) {
    double t = events_.top().t;
    if (t > config_.watchdog.max_sim_time_s) {
      truncate(strcat("stopped at max_sim_time_s = ", config_.watchdog.max_sim_time_s, " s simulated, with ",
                      in_system_, " requests unfinished"));
      break;
    }
    in_system_area_ += static_cast<double>(in_system_) * (t - now_);
    now_ = t;
    while (!events_.empty() && events_.top().t == t) {
      Event e = events_.top();
      events_.pop();
      if (e.kind == Kind::Arrival)
        on_arrival(e);
      else if (e.kind == Kind::StepDone)
        on_step_done(e);
      else
        on_transfer_done(e);
    }
    start_steps();
  }
  if (!truncated_ && in_system_ > 0) truncate(strcat(in_system_, " requests could not be scheduled (internal)"));
  ServeResult result;
  result.requests = std::move(records_);
  for (int p = 0; p < 2; ++p)
    for (ReplicaSeries& s : series_[p]) result.replicas.push_back(std::move(s));
  result.truncated = truncated_;
  result.truncation_reason = reason_;
  summarize(&result, config_.slo, now_, in_system_area_);
  return result;
}

ServeResult simulate_serving(const RequestList& requests, const ClusterConfig& config) {
  validate_serving(requests, config);
  return Simulation(requests, config).run();
}

}  // namespace lpu::serve
