// Capacity search (serve/capacity.h): probes are consistent with one threshold (every rate
// that met the SLOs lies below every rate that missed them), the answer is deterministic, and
// a looser SLO or a second replica never lowers it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/capacity.h"
#include "serve_test_util.h"

using namespace lpu;
using namespace lpu::serve;
using lpu::serve::testing::LinearCost;

namespace {

GeneratorSpec trace() {
  GeneratorSpec g;
  g.requests = 300;
  g.seed = 5;
  g.prompt = parse_length_spec("uniform:64:512", "prompt");
  g.output = parse_length_spec("uniform:16:128", "output");
  return g;
}

ClusterConfig cluster(StepCostModel* cost, double ttft_ms, double tpot_ms, int64_t replicas = 1) {
  ClusterConfig c;
  c.pool.cost = cost;
  c.pool.replicas = replicas;
  c.pool.scheduler.max_num_batched_tokens = 1024;
  c.pool.scheduler.chunk_size = 512;
  c.pool.scheduler.kv_capacity_blocks = 2000;
  c.slo = Slo{ttft_ms, tpot_ms};
  c.watchdog.max_sim_time_s = 3600;
  return c;
}

CapacitySearch search() {
  CapacitySearch s;
  s.low_rate = 0.5;
  s.high_rate = 8;
  return s;
}

}  // namespace

TEST(ServeCapacity, ProbesAgreeWithOneThresholdAndTheAnswerIsDeterministic) {
  LinearCost cost(2e-3, 2e-5, 1e-8);
  ClusterConfig c = cluster(&cost, 200, 10);
  CapacityResult a = find_max_rate(trace(), c, search());
  ASSERT_TRUE(a.found);
  EXPECT_GT(a.max_rate, search().low_rate);
  double lowest_miss = 1e300, highest_meet = 0;
  for (const CapacityProbe& p : a.probes) {
    if (p.meets)
      highest_meet = std::max(highest_meet, p.rate);
    else
      lowest_miss = std::min(lowest_miss, p.rate);
  }
  EXPECT_LT(highest_meet, lowest_miss);
  EXPECT_DOUBLE_EQ(a.max_rate, highest_meet);
  EXPECT_LE((lowest_miss - a.max_rate) / lowest_miss, search().rel_tolerance);
  CapacityResult b = find_max_rate(trace(), c, search());
  EXPECT_EQ(a.max_rate, b.max_rate);
  ASSERT_EQ(a.probes.size(), b.probes.size());
  for (size_t i = 0; i < a.probes.size(); ++i) EXPECT_EQ(a.probes[i].ttft_p99_s, b.probes[i].ttft_p99_s);
}

TEST(ServeCapacity, MonotoneInTheSloAndTheReplicas) {
  LinearCost cost(2e-3, 2e-5, 1e-8);
  double tight = find_max_rate(trace(), cluster(&cost, 100, 10), search()).max_rate;
  double loose = find_max_rate(trace(), cluster(&cost, 400, 10), search()).max_rate;
  double two = find_max_rate(trace(), cluster(&cost, 100, 10, 2), search()).max_rate;
  EXPECT_LE(tight, loose);
  EXPECT_LE(tight, two);
  EXPECT_GT(two, tight * 1.3);  // two replicas carry well more than one
}

TEST(ServeCapacity, NoCapacityWhenEvenTheLowestRateFails) {
  LinearCost cost(2e-3, 2e-5, 1e-8);
  CapacityResult r = find_max_rate(trace(), cluster(&cost, 0.001, 10), search());
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.max_rate, 0);
  EXPECT_EQ(r.probes.size(), 1u);
  CapacitySearch bad;
  bad.low_rate = 2, bad.high_rate = 1;
  EXPECT_THROW(find_max_rate(trace(), cluster(&cost, 100, 10), bad), InputError);
}
