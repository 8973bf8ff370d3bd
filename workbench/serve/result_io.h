// A serving run written out: one JSON object (the summary, every request, every replica's step
// series) and CSV tables. Field names carry their units (_s, _ms, _j).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "serve/cluster.h"
#include "serve/result.h"

namespace lpu::serve {

nlohmann::ordered_json summary_json(const ServeSummary& s);
// The cluster's keys (not the cost models: the caller names those), so a result file says what
// produced it.
nlohmann::ordered_json cluster_json(const ClusterConfig& c);
// `with_steps`: include each replica's per-step samples (large for long runs).
nlohmann::ordered_json result_json(const ServeResult& r, bool with_steps = true);

// One row per request: id, arrival_s, prompt/output tokens, replicas, queueing_s, ttft_s,
// tpot_s, e2e_s, tokens, preemptions, kv_transfer_s, energy_j, completed (empty cells for
// times a truncated run never reached).
void write_requests_csv(const ServeResult& r, std::ostream& out);
// One row per step of every replica: pool, replica, start_s, duration_s, seqs, tokens,
// prefill_tokens, kv_blocks_used, kv_use (fraction of capacity), waiting.
void write_steps_csv(const ServeResult& r, std::ostream& out);

}  // namespace lpu::serve
