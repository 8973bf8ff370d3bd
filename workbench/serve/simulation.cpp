#include "serve/simulation.h"

#include <cmath>

#include "serve/metrics.h"
#include "serve/validate.h"

namespace lpu::serve {

Simulation::Simulation(const RequestList& requests, const ClusterConfig& config)
    : requests_(requests), config_(config) {
  pool_config_[0] = &config.pool;
  pool_config_[1] = &config.decode_pool;
  int pools = config.disaggregated ? 2 : 1;
  for (int p = 0; p < pools; ++p) {
    ReplicaRole role = !config.disaggregated ? ReplicaRole::Unified
                       : p == 0              ? ReplicaRole::Prefill
                                             : ReplicaRole::Decode;
    const char* name = !config.disaggregated ? "unified" : p == 0 ? "prefill" : "decode";
    for (int r = 0; r < pool_config_[p]->replicas; ++r) {
      pools_[p].emplace_back(pool_config_[p]->scheduler, role);
      in_flight_[p].emplace_back();
      ReplicaSeries s;
      s.pool = name;
      s.index = r;
      s.kv_capacity_blocks = pool_config_[p]->scheduler.kv_capacity_blocks;
      series_[p].push_back(s);
    }
  }
  incoming_tokens_.assign(pools_[1].size(), 0);
  link_free_s_.assign(pools_[0].size(), 0);
  for (const Request& r : requests) {
    RequestRecord rec;
    rec.id = r.id;
    rec.arrival_s = r.arrival_s;
    rec.prompt_tokens = r.prompt_tokens;
    rec.output_tokens = r.output_tokens;
    records_.push_back(rec);
  }
}

void Simulation::push(Event e) {
  e.order = next_order_++;
  events_.push(e);
}

// Round-robin in arrival order, or the replica with the fewest tokens left to compute (ties:
// the lowest index), counting caches already on their way to a decode replica.
int Simulation::route(int pool) {
  int n = static_cast<int>(pools_[pool].size());
  if (config_.router == RouterKind::RoundRobin) return static_cast<int>(round_robin_[pool]++ % n);
  int best = 0;
  int64_t best_tokens = INT64_MAX;
  for (int r = 0; r < n; ++r) {
    int64_t t = pools_[pool][r].outstanding_tokens() + (pool == 1 ? incoming_tokens_[r] : 0);
    if (t < best_tokens) best = r, best_tokens = t;
  }
  return best;
}

void Simulation::on_arrival(const Event& e) {
  const Request& r = requests_[e.req];
  int dst = route(0);
  records_[e.req].prefill_replica = dst;
  Seq s;
  s.req = e.req;
  s.id = r.id;
  s.prompt = s.prefill_target = r.prompt_tokens;
  s.output = r.output_tokens;
  pools_[0][dst].enqueue(s);
  ++in_system_;
}

// A prefilled request leaves its prefill replica: its KV goes over that replica's link (one
// transfer at a time) to a decode replica chosen now, so the router sees it coming.
void Simulation::hand_off(int src, const SeqOutcome& o) {
  int dst = route(1);
  RequestRecord& rec = records_[o.req];
  rec.decode_replica = dst;
  incoming_tokens_[dst] += rec.output_tokens - rec.tokens_generated;
  double start = std::max(now_, link_free_s_[src]);
  link_free_s_[src] = start + config_.link.transfer_s(o.kv_tokens);
  double done = link_free_s_[src] + config_.link.latency_us * 1e-6;
  rec.kv_transfer_s = done - now_;
  push(Event{done, Kind::TransferDone, 0, 0, src, o.req, dst, o.kv_tokens, o.kv_blocks});
}

void Simulation::on_step_done(const Event& e) {
  InFlight& f = in_flight_[e.pool][e.replica];
  double tokens = static_cast<double>(f.batch.total_tokens());
  for (const SeqOutcome& o : pools_[e.pool][e.replica].finish_step()) {
    RequestRecord& rec = records_[o.req];
    rec.energy_j += f.cost.energy_j * static_cast<double>(o.new_tokens) / tokens;
    if (!o.emitted) continue;
    ++rec.tokens_generated;
    if (o.handed_off) {
      hand_off(e.replica, o);  // the user sees the first token when the decode side has the cache
      continue;
    }
    if (rec.first_token_s < 0) rec.first_token_s = now_;
    rec.last_token_s = now_;
    if (o.finished) --in_system_;
  }
}

void Simulation::on_transfer_done(const Event& e) {
  pools_[0][e.replica].release_blocks(e.kv_blocks);
  RequestRecord& rec = records_[e.req];
  rec.first_token_s = rec.last_token_s = now_;
  incoming_tokens_[e.dst] -= rec.output_tokens - rec.tokens_generated;
  Seq s;
  s.req = e.req;
  s.id = rec.id;
  s.prompt = rec.prompt_tokens;
  s.output = rec.output_tokens;
  s.prefill_target = s.computed = e.kv_tokens;
  s.generated = rec.tokens_generated;
  pools_[1][e.dst].enqueue(s);
}

}  // namespace lpu::serve
