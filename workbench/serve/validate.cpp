// The checks simulate_serving runs before it starts: a bad configuration, or a request that
// could never run, is an InputError up front instead of a run that stalls.
#include "serve/validate.h"

#include <cmath>

#include "serve/cluster.h"

namespace lpu::serve {
namespace {

void check_pool(const PoolConfig& p, const char* name) {
  const SchedulerConfig& s = p.scheduler;
  auto positive = [&](int64_t v, const char* key) {
    if (v < 1) throw InputError(strcat(name, " pool: ", key, " must be >= 1, got ", v));
  };
  positive(p.replicas, "replicas");
  positive(s.max_num_batched_tokens, "max_num_batched_tokens");
  positive(s.max_num_seqs, "max_num_seqs");
  positive(s.chunk_size, "chunk_size");
  positive(s.block_size, "block_size");
  positive(s.kv_capacity_blocks, "kv_capacity_blocks");
  if (p.cost == nullptr) throw InputError(strcat(name, " pool: no step-cost model"));
}

// The largest KV a request holds on a pool's replica, in tokens.
int64_t kv_tokens(const Request& r, bool disaggregated, int pool) {
  if (disaggregated && pool == 0) return r.prompt_tokens;
  return r.prompt_tokens + r.output_tokens - 1;  // the last token is never fed back
}

void check_request(const Request& r, const ClusterConfig& c, int pool) {
  const SchedulerConfig& s = (pool == 0 ? c.pool : c.decode_pool).scheduler;
  if (pool == 0 && !s.chunked_prefill && r.prompt_tokens > s.max_num_batched_tokens)
    throw InputError(strcat("request ", r.id, ": its prompt of ", r.prompt_tokens,
                            " tokens exceeds max_num_batched_tokens = ", s.max_num_batched_tokens,
                            " and chunked prefill is off, so it could never be scheduled"));
  int64_t tokens = kv_tokens(r, c.disaggregated, pool);
  int64_t blocks = (tokens + s.block_size - 1) / s.block_size;
  if (blocks > s.kv_capacity_blocks) {
    const char* where = !c.disaggregated ? "a replica" : pool == 0 ? "a prefill replica" : "a decode replica";
    throw KvCapacityError(
        strcat("request ", r.id, " needs the KV cache of ", tokens, " tokens (", blocks, " blocks of ", s.block_size,
               ") but ", where, " holds ", s.kv_capacity_blocks, " blocks: it can never fit"),
        r.id, tokens, blocks, s.kv_capacity_blocks);
  }
}

}  // namespace

void validate_serving(const RequestList& requests, const ClusterConfig& c) {
  check_pool(c.pool, c.disaggregated ? "prefill" : "serving");
  if (c.disaggregated) {
    check_pool(c.decode_pool, "decode");
    if (!(c.link.bandwidth_gbps > 0) || !std::isfinite(c.link.bandwidth_gbps))
      throw InputError(strcat("link: bandwidth_gbps must be > 0, got ", c.link.bandwidth_gbps));
    if (!(c.link.latency_us >= 0) || !std::isfinite(c.link.latency_us))
      throw InputError(strcat("link: latency_us must be >= 0, got ", c.link.latency_us));
    if (!(c.link.kv_bytes_per_token >= 0) || !std::isfinite(c.link.kv_bytes_per_token))
      throw InputError(strcat("link: kv_bytes_per_token must be >= 0, got ", c.link.kv_bytes_per_token));
  }
  if (!(c.slo.ttft_ms > 0) || !(c.slo.tpot_ms > 0))
    throw InputError(
        strcat("SLO: slo_ttft_ms and slo_tpot_ms must be > 0, got ", c.slo.ttft_ms, " and ", c.slo.tpot_ms));
  if (!(c.watchdog.max_sim_time_s > 0) || c.watchdog.max_steps < 1)
    throw InputError("watchdog: max_sim_time_s must be > 0 and max_steps >= 1");
  if (requests.empty()) throw InputError("serving: no requests");
  for (const Request& r : requests) {
    if (r.prompt_tokens < 1 || r.output_tokens < 1 || !(r.arrival_s >= 0) || !std::isfinite(r.arrival_s))
      throw InputError(strcat("request ", r.id, ": expected arrival >= 0 and token counts >= 1"));
    check_request(r, c, 0);
    if (c.disaggregated) check_request(r, c, 1);
  }
}

}  // namespace lpu::serve
