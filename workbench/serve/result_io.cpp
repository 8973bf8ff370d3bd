#include "serve/result_io.h"

#include <cstdio>

namespace lpu::serve {
namespace {

using Json = nlohmann::ordered_json;

Json distribution_json(const Distribution& d) {
  return Json{{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
}

// A time the request never reached is null, not a negative number that could be averaged.
Json time_or_null(bool reached, double v) { return reached ? Json(v) : Json(nullptr); }

Json request_json(const RequestRecord& r) {
  bool done = r.completed();
  Json j;
  j["id"] = r.id;
  j["arrival_s"] = r.arrival_s;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["prefill_replica"] = r.prefill_replica;
  j["decode_replica"] = r.decode_replica;
  j["queueing_s"] = time_or_null(r.first_scheduled_s >= 0, r.queueing_s());
  j["ttft_s"] = time_or_null(r.first_token_s >= 0, r.ttft_s());
  j["tpot_s"] = time_or_null(done && r.output_tokens > 1, r.tpot_s());
  j["e2e_s"] = time_or_null(done, r.e2e_s());
  j["tokens_generated"] = r.tokens_generated;
  j["preemptions"] = r.preemptions;
  j["kv_transfer_s"] = r.kv_transfer_s;
  j["energy_j"] = r.energy_j;
  j["completed"] = done;
  return j;
}

Json replica_json(const ReplicaSeries& s, bool with_steps) {
  Json j{{"pool", s.pool},   {"replica", s.index}, {"kv_capacity_blocks", s.kv_capacity_blocks},
         {"steps", s.steps}, {"busy_s", s.busy_s}, {"peak_kv_blocks", s.peak_kv_blocks}};
  if (!with_steps) return j;
  // Columns, not one object per step: a long run has hundreds of thousands of steps.
  Json start = Json::array(), dur = Json::array(), seqs = Json::array(), tokens = Json::array(),
       prefill = Json::array(), kv = Json::array(), waiting = Json::array();
  for (const StepSample& m : s.samples) {
    start.push_back(m.start_s), dur.push_back(m.duration_s), seqs.push_back(m.seqs);
    tokens.push_back(m.tokens), prefill.push_back(m.prefill_tokens), kv.push_back(m.kv_blocks_used);
    waiting.push_back(m.waiting);
  }
  j["step_series"] = Json{{"start_s", start},          {"duration_s", dur},    {"seqs", seqs},      {"tokens", tokens},
                          {"prefill_tokens", prefill}, {"kv_blocks_used", kv}, {"waiting", waiting}};
  return j;
}

Json pool_json(const PoolConfig& p) {
  const SchedulerConfig& s = p.scheduler;
  return Json{{"replicas", p.replicas},
              {"max_num_batched_tokens", s.max_num_batched_tokens},
              {"max_num_seqs", s.max_num_seqs},
              {"chunked_prefill", s.chunked_prefill},
              {"chunk_size", s.chunk_size},
              {"block_size", s.block_size},
              {"kv_capacity_blocks", s.kv_capacity_blocks}};
}

std::string cell(bool reached, double v) {
  if (!reached) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Json summary_json(const ServeSummary& s) {
  Json j;
  j["requests"] = s.requests;
  j["completed"] = s.completed;
  j["duration_s"] = s.duration_s;
  j["requests_per_s"] = s.requests_per_s;
  j["output_tokens_per_s"] = s.output_tokens_per_s;
  j["queueing_s"] = distribution_json(s.queueing_s);
  j["ttft_s"] = distribution_json(s.ttft_s);
  j["tpot_s"] = distribution_json(s.tpot_s);
  j["e2e_s"] = distribution_json(s.e2e_s);
  j["slo"] = Json{{"ttft_ms", s.slo_ttft_ms},
                  {"tpot_ms", s.slo_tpot_ms},
                  {"met", s.slo_met},
                  {"attainment", s.slo_attainment},
                  {"goodput_rps", s.goodput_rps}};
  j["preemptions"] = s.preemptions;
  j["steps"] = s.steps;
  j["energy_j"] = s.energy_j;
  j["energy_per_request_j"] = s.energy_per_request_j;
  j["energy_per_token_j"] = s.energy_per_token_j;
  j["mean_in_system"] = s.mean_in_system;
  return j;
}

Json cluster_json(const ClusterConfig& c) {
  Json j;
  j["router"] = c.router == RouterKind::RoundRobin ? "round-robin" : "least-outstanding-tokens";
  j["disaggregated"] = c.disaggregated;
  j[c.disaggregated ? "prefill_pool" : "pool"] = pool_json(c.pool);
  if (c.disaggregated) {
    j["decode_pool"] = pool_json(c.decode_pool);
    j["link"] = Json{{"bandwidth_gbps", c.link.bandwidth_gbps},
                     {"latency_us", c.link.latency_us},
                     {"kv_bytes_per_token", c.link.kv_bytes_per_token}};
  }
  j["slo"] = Json{{"ttft_ms", c.slo.ttft_ms}, {"tpot_ms", c.slo.tpot_ms}};
  j["watchdog"] = Json{{"max_sim_time_s", c.watchdog.max_sim_time_s}, {"max_steps", c.watchdog.max_steps}};
  return j;
}

Json result_json(const ServeResult& r, bool with_steps) {
  Json j;
  j["truncated"] = r.truncated;
  if (r.truncated) j["truncation_reason"] = r.truncation_reason;
  j["summary"] = summary_json(r.summary);
  Json reps = Json::array();
  for (const ReplicaSeries& s : r.replicas) reps.push_back(replica_json(s, with_steps));
  j["replicas"] = reps;
  Json reqs = Json::array();
  for (const RequestRecord& q : r.requests) reqs.push_back(request_json(q));
  j["requests"] = reqs;
  return j;
}

void write_requests_csv(const ServeResult& r, std::ostream& out) {
  out << "id,arrival_s,prompt_tokens,output_tokens,prefill_replica,decode_replica,queueing_s,ttft_s,tpot_s,e2e_s,"
         "tokens_generated,preemptions,kv_transfer_s,energy_j,completed\n";
  for (const RequestRecord& q : r.requests) {
    bool done = q.completed();
    out << q.id << ',' << cell(true, q.arrival_s) << ',' << q.prompt_tokens << ',' << q.output_tokens << ','
        << q.prefill_replica << ',' << q.decode_replica << ',' << cell(q.first_scheduled_s >= 0, q.queueing_s()) << ','
        << cell(q.first_token_s >= 0, q.ttft_s()) << ',' << cell(done && q.output_tokens > 1, q.tpot_s()) << ','
        << cell(done, q.e2e_s()) << ',' << q.tokens_generated << ',' << q.preemptions << ','
        << cell(true, q.kv_transfer_s) << ',' << cell(true, q.energy_j) << ',' << (done ? 1 : 0) << '\n';
  }
}

void write_steps_csv(const ServeResult& r, std::ostream& out) {
  out << "pool,replica,start_s,duration_s,seqs,tokens,prefill_tokens,kv_blocks_used,kv_use,waiting\n";
  for (const ReplicaSeries& s : r.replicas)
    for (const StepSample& m : s.samples) {
      double use = s.kv_capacity_blocks > 0 ? static_cast<double>(m.kv_blocks_used) / s.kv_capacity_blocks : 0;
      out << s.pool << ',' << s.index << ',' << cell(true, m.start_s) << ',' << cell(true, m.duration_s) << ','
          << m.seqs << ',' << m.tokens << ',' << m.prefill_tokens << ',' << m.kv_blocks_used << ',' << cell(true, use)
          << ',' << m.waiting << '\n';
    }
}

}  // namespace lpu::serve
