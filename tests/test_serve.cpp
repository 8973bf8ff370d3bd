// The serving simulation (workbench/serve) against facts that must hold whatever the cost
// model: Little's law on the run's own numbers, determinism, TTFT = the prefill step when
// nothing queues, chunked prefill's step count, preemption under KV pressure, routing,
// disaggregation's transfer time, the watchdog, and up-front errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "serve/cluster.h"
#include "serve/generator.h"
#include "serve/result_io.h"
#include "serve/rng.h"
#include "serve_test_util.h"
#include "support/error.h"

using namespace lpu;
using namespace lpu::serve;
using lpu::serve::testing::LinearCost;
using lpu::serve::testing::unbounded;
using ::testing::HasSubstr;

namespace {

RequestList poisson(int64_t n, double rate, const std::string& prompt, const std::string& output, uint64_t seed = 1) {
  GeneratorSpec g;
  g.requests = n;
  g.seed = seed;
  g.arrival.rate = rate;
  g.prompt = parse_length_spec(prompt, "prompt");
  g.output = parse_length_spec(output, "output");
  return generate_requests(g);
}

// A busy but stable configuration: batching, chunking and KV pressure all at work.
ClusterConfig busy(StepCostModel* cost) {
  ClusterConfig c;
  c.pool.cost = cost;
  c.pool.replicas = 2;
  c.pool.scheduler.max_num_batched_tokens = 512;
  c.pool.scheduler.max_num_seqs = 32;
  c.pool.scheduler.chunk_size = 256;
  c.pool.scheduler.kv_capacity_blocks = 400;
  c.router = RouterKind::LeastOutstandingTokens;
  return c;
}

}  // namespace

TEST(Serve, LittlesLawHoldsOnTheRunsOwnNumbers) {
  LinearCost cost;
  ClusterConfig c = busy(&cost);
  ServeResult r = simulate_serving(poisson(2000, 40, "uniform:16:1024", "uniform:1:256"), c);
  ASSERT_FALSE(r.truncated) << r.truncation_reason;
  const ServeSummary& s = r.summary;
  ASSERT_EQ(s.completed, 2000);
  // L (the clock's time-average of requests in the system) = throughput x mean time in system.
  EXPECT_NEAR(s.mean_in_system, s.requests_per_s * s.e2e_s.mean, 1e-6 * s.mean_in_system);
  EXPECT_GT(s.mean_in_system, 1.0);  // requests did overlap
}

TEST(Serve, SameSeedSameJsonByteForByte) {
  auto run = [](uint64_t seed) {
    LinearCost cost;
    ClusterConfig c = busy(&cost);
    std::ostringstream a;
    a << result_json(simulate_serving(poisson(500, 60, "zipf:1.1:8:2048", "uniform:1:200", seed), c)).dump();
    return a.str();
  };
  std::string first = run(3);
  EXPECT_EQ(first, run(3));
  EXPECT_NE(first, run(4));
}

TEST(Serve, UnloadedTtftIsThePrefillStep) {
  LinearCost cost;
  RequestList reqs = poisson(50, 0.01, "uniform:1:3000", "uniform:1:50");  // 100 s apart on average
  ServeResult r = simulate_serving(reqs, unbounded(&cost));
  for (size_t i = 0; i < reqs.size(); ++i) {
    const RequestRecord& q = r.requests[i];
    // Times are absolute (arrival + step), so compare to the rounding of a ~100 s clock.
    EXPECT_NEAR(q.ttft_s(), cost.time(static_cast<double>(reqs[i].prompt_tokens)), 1e-12 * q.arrival_s) << i;
    EXPECT_EQ(q.queueing_s(), 0);
    // Each later token is one decode step at a context one longer than the last.
    double e2e = q.ttft_s();
    for (int64_t k = 1; k < reqs[i].output_tokens; ++k)
      e2e += cost.time(1, static_cast<double>(reqs[i].prompt_tokens + k - 1));
    EXPECT_NEAR(q.e2e_s(), e2e, 1e-11 * q.arrival_s) << i;
  }
}

TEST(Serve, ChunkedPrefillTakesCeilPromptOverChunkSteps) {
  for (int64_t chunk : {64, 100, 1000, 5000}) {
    LinearCost cost;
    ClusterConfig c = unbounded(&cost);
    c.pool.scheduler.chunked_prefill = true;
    c.pool.scheduler.chunk_size = chunk;
    ServeResult r = simulate_serving({Request{0, 0.0, 1000, 3}}, c);
    int64_t chunks = (1000 + chunk - 1) / chunk;
    EXPECT_EQ(r.summary.steps, chunks + 2) << chunk;  // the prefill chunks, then two decodes
    double ttft = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      int64_t done = k * chunk;
      ttft += cost.time(static_cast<double>(std::min(chunk, 1000 - done)), static_cast<double>(done));
    }
    EXPECT_NEAR(r.requests[0].ttft_s(), ttft, 1e-12) << chunk;
    const auto& prefill = r.replicas[0].samples;
    for (int64_t k = 0; k < chunks; ++k) EXPECT_EQ(prefill[k].prefill_tokens, std::min(chunk, 1000 - k * chunk));
  }
}

TEST(Serve, TokenBudgetAndSequenceCapBoundEveryStep) {
  LinearCost cost;
  ClusterConfig c = busy(&cost);
  c.pool.scheduler.max_num_seqs = 5;
  ServeResult r = simulate_serving(poisson(300, 100, "uniform:16:700", "uniform:1:64"), c);
  for (const ReplicaSeries& s : r.replicas)
    for (const StepSample& m : s.samples) {
      EXPECT_LE(m.tokens, 512);
      EXPECT_LE(m.seqs, 5);
      EXPECT_LE(m.kv_blocks_used, 400);
    }
  EXPECT_EQ(r.summary.completed, 300);
}

TEST(Serve, PreemptionWhenBlocksRunOutAndEveryRequestCompletes) {
  LinearCost cost;
  ClusterConfig c = unbounded(&cost);
  c.pool.scheduler.block_size = 16;
  c.pool.scheduler.kv_capacity_blocks = 64;  // 1024 tokens: room for two of these at their end
  RequestList reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(Request{i, 0.001 * i, 200, 300});
  ServeResult r = simulate_serving(reqs, c);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.summary.completed, 6);
  EXPECT_GT(r.summary.preemptions, 0);
  int64_t counted = 0;
  for (const RequestRecord& q : r.requests) {
    counted += q.preemptions;
    EXPECT_EQ(q.tokens_generated, 300);
  }
  EXPECT_EQ(counted, r.summary.preemptions);
  EXPECT_EQ(r.requests[0].preemptions, 0);  // the oldest is never the victim
  EXPECT_LE(r.replicas[0].peak_kv_blocks, 64);
}

TEST(Serve, RoundRobinAndLeastOutstandingTokensRouteDifferently) {
  // One huge request, then two small ones: round-robin puts the third behind the huge one;
  // least-outstanding-tokens sends it to the other replica.
  RequestList reqs = {Request{0, 0.0, 4000, 500}, Request{1, 0.0001, 10, 5}, Request{2, 0.0002, 10, 5},
                      Request{3, 0.0003, 10, 5}};
  LinearCost cost;
  ClusterConfig c = unbounded(&cost);
  c.pool.replicas = 2;
  ServeResult rr = simulate_serving(reqs, c);
  EXPECT_EQ(rr.requests[0].prefill_replica, 0);
  EXPECT_EQ(rr.requests[1].prefill_replica, 1);
  EXPECT_EQ(rr.requests[2].prefill_replica, 0);
  EXPECT_EQ(rr.requests[3].prefill_replica, 1);
  c.router = RouterKind::LeastOutstandingTokens;
  ServeResult lot = simulate_serving(reqs, c);
  EXPECT_EQ(lot.requests[0].prefill_replica, 0);
  EXPECT_EQ(lot.requests[1].prefill_replica, 1);
  EXPECT_EQ(lot.requests[2].prefill_replica, 1);
  EXPECT_EQ(lot.requests[3].prefill_replica, 1);
  EXPECT_LT(lot.requests[2].ttft_s(), rr.requests[2].ttft_s());
  EXPECT_EQ(parse_router("least-outstanding-tokens"), RouterKind::LeastOutstandingTokens);
  EXPECT_THROW(parse_router("random"), InputError);
}

TEST(Serve, DisaggregationAddsTheKvTransferToTtft) {
  LinearCost prefill_cost(2e-3, 1e-5, 0), decode_cost(5e-4, 0, 1e-8);
  ClusterConfig c = unbounded(&prefill_cost);
  c.disaggregated = true;
  c.decode_pool = c.pool;
  c.decode_pool.cost = &decode_cost;
  c.link = LinkConfig{100, 20, 131072};  // 100 Gbit/s, 20 us, 128 KiB of KV per token
  RequestList reqs = {Request{0, 1.0, 1000, 4}};
  ServeResult r = simulate_serving(reqs, c);
  double transfer = 20e-6 + 1000 * 131072 * 8 / 100e9;
  EXPECT_NEAR(r.requests[0].kv_transfer_s, transfer, 1e-12);
  EXPECT_NEAR(r.requests[0].ttft_s(), prefill_cost.time(1000) + transfer, 1e-12);
  EXPECT_NEAR(r.requests[0].tpot_s(), decode_cost.time(1, 1001), 1e-9);  // contexts 1000..1002
  EXPECT_EQ(r.requests[0].decode_replica, 0);
  EXPECT_EQ(r.replicas.size(), 2u);
  EXPECT_EQ(r.replicas[1].pool, "decode");
  EXPECT_EQ(r.replicas[1].steps, 3);
  // The same request on one unified replica: the transfer is the difference.
  ServeResult u = simulate_serving(reqs, unbounded(&prefill_cost));
  EXPECT_NEAR(r.requests[0].ttft_s() - u.requests[0].ttft_s(), transfer, 1e-12);
}

TEST(Serve, DisaggregatedClusterUnderLoadCompletesEverything) {
  LinearCost prefill_cost, decode_cost;
  ClusterConfig c = busy(&prefill_cost);
  c.disaggregated = true;
  c.decode_pool = c.pool;
  c.decode_pool.cost = &decode_cost;
  c.decode_pool.replicas = 3;
  c.link.kv_bytes_per_token = 65536;
  ServeResult r = simulate_serving(poisson(800, 40, "uniform:16:1024", "uniform:1:200"), c);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.summary.completed, 800);
  EXPECT_NEAR(r.summary.mean_in_system, r.summary.requests_per_s * r.summary.e2e_s.mean,
              1e-6 * r.summary.mean_in_system);
  for (const RequestRecord& q : r.requests) {
    if (q.output_tokens > 1) {
      EXPECT_GE(q.decode_replica, 0);
    }
  }
}

TEST(Serve, WatchdogTruncatesAnOverloadRun) {
  LinearCost cost(0.05, 1e-4, 0);  // slow steps: 200 req/s far beyond what one replica serves
  ClusterConfig c = busy(&cost);
  c.pool.replicas = 1;
  c.watchdog.max_sim_time_s = 5;
  ServeResult r = simulate_serving(poisson(5000, 200, "uniform:100:500", "uniform:50:200"), c);
  EXPECT_TRUE(r.truncated);
  EXPECT_THAT(r.truncation_reason, HasSubstr("max_sim_time_s = 5"));
  EXPECT_LT(r.summary.completed, 5000);
  std::string json = result_json(r, false).dump();
  EXPECT_THAT(json, HasSubstr("\"truncated\":true"));
  c.watchdog = Watchdog{};
  c.watchdog.max_steps = 100;
  ServeResult s = simulate_serving(poisson(5000, 200, "uniform:100:500", "uniform:50:200"), c);
  EXPECT_TRUE(s.truncated);
  EXPECT_THAT(s.truncation_reason, HasSubstr("max_steps = 100"));
  EXPECT_EQ(s.summary.steps, 100);
}

TEST(Serve, RequestsThatCanNeverRunAreErrorsUpFront) {
  LinearCost cost;
  ClusterConfig c = unbounded(&cost);
  c.pool.scheduler.kv_capacity_blocks = 10;  // 160 tokens
  try {
    simulate_serving({Request{42, 0, 100, 70}}, c);
    ADD_FAILURE();
  } catch (const KvCapacityError& e) {
    EXPECT_EQ(e.request_id, 42);
    EXPECT_EQ(e.tokens, 169);
    EXPECT_EQ(e.blocks_needed, 11);
    EXPECT_THAT(e.what(), HasSubstr("request 42 needs the KV cache of 169 tokens (11 blocks of 16)"));
  }
  EXPECT_NO_THROW(simulate_serving({Request{42, 0, 100, 61}}, c));  // 160 tokens: exactly full
  c = unbounded(&cost);
  c.pool.scheduler.max_num_batched_tokens = 512;
  EXPECT_THROW(simulate_serving({Request{1, 0, 513, 1}}, c), InputError);
  c.pool.scheduler.chunked_prefill = true;
  EXPECT_NO_THROW(simulate_serving({Request{1, 0, 513, 1}}, c));
  c.slo.ttft_ms = 0;
  EXPECT_THROW(simulate_serving({Request{1, 0, 5, 1}}, c), InputError);
}

TEST(Serve, SloGoodputAndOneTokenRequests) {
  LinearCost cost;
  ClusterConfig c = unbounded(&cost);
  c.slo = Slo{cost.time(100) * 1e3 * 1.0001, 1000};
  // Two requests far apart: the short prompt meets the TTFT target, the long one does not.
  ServeResult r = simulate_serving({Request{0, 0, 100, 1}, Request{1, 100, 5000, 2}}, c);
  EXPECT_EQ(r.summary.slo_met, 1);
  EXPECT_DOUBLE_EQ(r.summary.slo_attainment, 0.5);
  EXPECT_DOUBLE_EQ(r.summary.goodput_rps, 1 / r.summary.duration_s);
  EXPECT_EQ(r.summary.tpot_s.count, 1);  // a one-token request has no gaps to average
  EXPECT_DOUBLE_EQ(r.summary.energy_j, 0.5 * (100 + 5000 + 1));
  EXPECT_DOUBLE_EQ(r.summary.energy_per_token_j, r.summary.energy_j / 3);
}

TEST(Serve, JsonAndCsvCarryEveryRequestAndStep) {
  LinearCost cost;
  ClusterConfig c = busy(&cost);
  ServeResult r = simulate_serving(poisson(100, 30, "uniform:16:300", "uniform:1:40"), c);
  nlohmann::ordered_json j = result_json(r);
  EXPECT_EQ(j["requests"].size(), 100u);
  EXPECT_EQ(j["replicas"].size(), 2u);
  EXPECT_EQ(j["replicas"][0]["step_series"]["tokens"].size(), static_cast<size_t>(r.replicas[0].steps));
  EXPECT_EQ(j["summary"]["completed"], 100);
  EXPECT_FALSE(j.contains("truncation_reason"));
  EXPECT_EQ(cluster_json(c)["pool"]["kv_capacity_blocks"], 400);
  std::ostringstream reqs, steps;
  write_requests_csv(r, reqs);
  write_steps_csv(r, steps);
  auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(reqs.str()), 101);
  EXPECT_EQ(lines(steps.str()), 1 + r.summary.steps);
  EXPECT_EQ(reqs.str().substr(0, 22), "id,arrival_s,prompt_to");
}

// Many small random clusters under pressure (tiny KV caches, small budgets, both prefill
// modes, disaggregation): every request completes, the KV cache and the budget are never
// exceeded, and Little's law holds. A scheduling dead end would show as a truncated run.
TEST(Serve, RandomClustersUnderPressureCompleteEverything) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    LinearCost prefill_cost, decode_cost(5e-4, 1e-5, 2e-8);
    ClusterConfig c;
    c.pool.cost = &prefill_cost;
    c.pool.replicas = 1 + static_cast<int64_t>(rng.below(3));
    SchedulerConfig& s = c.pool.scheduler;
    s.block_size = 1 + static_cast<int64_t>(rng.below(32));
    s.max_num_batched_tokens = 64 + static_cast<int64_t>(rng.below(1024));
    s.max_num_seqs = 1 + static_cast<int64_t>(rng.below(16));
    s.chunked_prefill = rng.below(2) == 1;
    s.chunk_size = 1 + static_cast<int64_t>(rng.below(512));
    int64_t longest = std::max<int64_t>(64, s.max_num_batched_tokens);  // prompts fit the budget unchunked
    s.kv_capacity_blocks = (longest + 64 + s.block_size) / s.block_size + static_cast<int64_t>(rng.below(40));
    c.router = rng.below(2) ? RouterKind::RoundRobin : RouterKind::LeastOutstandingTokens;
    c.disaggregated = rng.below(2) == 1;
    c.decode_pool = c.pool;
    c.decode_pool.cost = &decode_cost;
    c.link.kv_bytes_per_token = 1e5;
    RequestList reqs =
        poisson(150, 20 + static_cast<double>(rng.below(200)), strcat("uniform:1:", longest), "uniform:1:64", seed);
    ServeResult r = simulate_serving(reqs, c);
    ASSERT_FALSE(r.truncated) << "seed " << seed << ": " << r.truncation_reason;
    EXPECT_EQ(r.summary.completed, 150) << seed;
    EXPECT_NEAR(r.summary.mean_in_system, r.summary.requests_per_s * r.summary.e2e_s.mean,
                1e-6 * r.summary.mean_in_system)
        << seed;
    for (const ReplicaSeries& rs : r.replicas) {
      EXPECT_LE(rs.peak_kv_blocks, rs.kv_capacity_blocks) << seed;
      for (const StepSample& m : rs.samples) EXPECT_LE(m.tokens, s.max_num_batched_tokens) << seed;
    }
  }
}
