// A serving cluster: R replicas behind a router, or a prefill pool and a decode pool that hand
// each request's KV cache over a link (disaggregation). simulate_serving runs a request list
// through it as a discrete-event simulation and returns every request's timeline.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "serve/request.h"
#include "serve/result.h"
#include "serve/scheduler.h"
#include "serve/step_cost.h"

namespace lpu::serve {

// R identical replicas sharing one step-cost model (a replica is N devices with TP: the model
// prices the whole replica's step).
struct PoolConfig {
  int64_t replicas = 1;
  SchedulerConfig scheduler;
  StepCostModel* cost = nullptr;  // not owned
};

// The link that carries a prefilled request's KV cache to a decode replica. Each prefill
// replica sends one cache at a time: a transfer occupies its link for bytes / bandwidth, and
// arrives `latency_us` after that.
struct LinkConfig {
  double bandwidth_gbps = 100;  // gigabits (1e9 bits) per second, as network links are rated
  double latency_us = 10;
  double kv_bytes_per_token = 0;            // KV bytes of one token, all layers (from the model)
  double transfer_s(int64_t tokens) const;  // without the latency
};

enum class RouterKind { RoundRobin, LeastOutstandingTokens };

struct Slo {
  double ttft_ms = 1000;
  double tpot_ms = 50;
};

// Bounds that keep an overloaded run finite: it stops at whichever comes first and says so.
struct Watchdog {
  double max_sim_time_s = 24 * 3600;
  int64_t max_steps = 20'000'000;  // all replicas together
};

struct ClusterConfig {
  PoolConfig pool;  // every replica, or the prefill pool when disaggregated
  bool disaggregated = false;
  PoolConfig decode_pool;
  LinkConfig link;
  RouterKind router = RouterKind::RoundRobin;
  Slo slo;
  Watchdog watchdog;
  bool record_steps = true;  // the per-step time series (KV use, batch size) in the result
};

// InputError for a bad configuration, or for a request that can never run: its prompt alone
// exceeds the token budget without chunked prefill, or its KV (prompt + output - 1 tokens)
// exceeds a replica's capacity (KvCapacityError, for the caller to word in bytes and devices).
ServeResult simulate_serving(const RequestList& requests, const ClusterConfig& config);

// Parses "round-robin" | "least-outstanding-tokens" (InputError otherwise).
RouterKind parse_router(const std::string& text);

}  // namespace lpu::serve
