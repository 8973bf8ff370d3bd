// What a serving simulation returns: every request's timeline, each replica's step series, and
// the summary over them (serve/metrics.h defines the summary's figures).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace lpu::serve {

// A request whose KV cache can never fit a replica, with the figures the caller needs to say
// how many bytes and devices it would take.
class KvCapacityError : public InputError {
 public:
  KvCapacityError(const std::string& msg, int64_t request_id, int64_t tokens, int64_t blocks_needed,
                  int64_t capacity_blocks)
      : InputError(msg),
        request_id(request_id),
        tokens(tokens),
        blocks_needed(blocks_needed),
        capacity_blocks(capacity_blocks) {}
  int64_t request_id, tokens, blocks_needed, capacity_blocks;
};

// Times are seconds of simulated time from the trace's zero; -1 where the event never happened
// (a truncated run).
struct RequestRecord {
  int64_t id = 0;
  double arrival_s = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;
  int prefill_replica = -1;  // the replica it ran on (unified), or its prefill replica
  int decode_replica = -1;   // disaggregated only
  double first_scheduled_s = -1;
  double first_token_s = -1;
  double last_token_s = -1;
  int64_t tokens_generated = 0;
  int64_t preemptions = 0;
  double kv_transfer_s = 0;  // disaggregated: link time of its KV cache (latency included)
  double energy_j = 0;       // its share of every step it was in (by tokens computed)
  bool completed() const { return tokens_generated == output_tokens; }
  double queueing_s() const { return first_scheduled_s - arrival_s; }
  double ttft_s() const { return first_token_s - arrival_s; }
  // Mean gap between its later tokens; 0 for a one-token request (it has none).
  double tpot_s() const { return output_tokens > 1 ? (last_token_s - first_token_s) / (output_tokens - 1) : 0; }
  double e2e_s() const { return last_token_s - arrival_s; }
};

// One step of one replica, for the KV-use and batch-size time series.
struct StepSample {
  double start_s = 0, duration_s = 0;
  int64_t seqs = 0, tokens = 0, prefill_tokens = 0;
  int64_t kv_blocks_used = 0;  // after the step's allocation
  int64_t waiting = 0;         // requests queued at the replica when the step started
};

struct ReplicaSeries {
  std::string pool;  // "unified", "prefill" or "decode"
  int index = 0;
  int64_t kv_capacity_blocks = 0;
  int64_t steps = 0;
  double busy_s = 0;
  int64_t peak_kv_blocks = 0;
  std::vector<StepSample> samples;  // empty unless ClusterConfig::record_steps
};

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct ServeSummary {
  int64_t requests = 0, completed = 0;
  double duration_s = 0;  // first arrival to last token
  double requests_per_s = 0, output_tokens_per_s = 0;
  Distribution queueing_s, ttft_s, tpot_s, e2e_s;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  int64_t slo_met = 0;
  double slo_attainment = 0;  // share of all requests (unfinished ones fail)
  double goodput_rps = 0;     // requests meeting both SLOs per second
  int64_t preemptions = 0;
  int64_t steps = 0;
  double energy_j = 0, energy_per_request_j = 0, energy_per_token_j = 0;
  double mean_in_system = 0;  // time-average of requests arrived and not finished (Little's L)
};

struct ServeResult {
  std::vector<RequestRecord> requests;
  std::vector<ReplicaSeries> replicas;
  ServeSummary summary;
  bool truncated = false;
  std::string truncation_reason;
};

}  // namespace lpu::serve
