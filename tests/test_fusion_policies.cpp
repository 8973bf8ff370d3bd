// Fusion policies against the traffic lower bound and each other (issue 5 acceptance).
#include <gtest/gtest.h>

#include "jobs.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
ArchConfig arch(const std::string& name) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml");
}
WorkloadSpec file(const std::string& name) {
  return resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + name + ".yaml");
}
double ratio(const RunOutcome& o) { return o.to_json()["traffic_ratio"].get<double>(); }
// One decode step of OPT-1.3B shapes with a single layer (plus the LM head), 2048 cached tokens.
WorkloadSpec decode_layer() {
  WorkloadSpec w = file("opt-1.3b-decode");
  w.layers = 1;
  return w;
}
}  // namespace

// Microbenchmarks fuse to exactly the compulsory traffic; unfused is strictly worse.
TEST(FusionPolicies, GreedyReachesCompulsoryTrafficOnMicrobenchmarks) {
  for (const std::string name : {"ln_gelu_add", "softmax", "rms_norm"}) {
    RunOutcome g = run_job(file(name), arch("lpu-small"), "greedy", false);
    RunOutcome n = run_job(file(name), arch("lpu-small"), "none", false);
    EXPECT_DOUBLE_EQ(ratio(g), 1.0) << name;
    EXPECT_GT(ratio(n), ratio(g)) << name;
    EXPECT_GT(n.sim.stats.cycles, g.sim.stats.cycles) << name;
  }
}

// A decode layer: weights, KV cache and the input are read once; the only extra traffic is
// the attention scores (concatenated in HBM) and the per-head attention output.
TEST(FusionPolicies, GreedyDecodeLayerIsWithinFivePercentOfCompulsory) {
  RunOutcome g = run_job(decode_layer(), arch("lpu-asic"), "greedy", false);
  RunOutcome n = run_job(decode_layer(), arch("lpu-asic"), "none", false);
  EXPECT_LE(ratio(g), 1.05);
  EXPECT_GE(ratio(g), 1.0);
  EXPECT_GT(ratio(n), ratio(g));
  EXPECT_LT(g.sim.stats.cycles, n.sim.stats.cycles);
}

// search keeps greedy among its candidates, so it is never slower.
TEST(FusionPolicies, SearchIsNeverSlowerThanGreedy) {
  std::vector<std::pair<WorkloadSpec, std::string>> cases = {
      {file("ln_gelu_add"), "lpu-small"}, {file("softmax"), "lpu-small"}, {file("tiny-opt-decode"), "lpu-small"},
      {decode_layer(), "lpu-asic"}};
  for (const auto& [w, a] : cases) {
    RunOutcome g = run_job(w, arch(a), "greedy", false);
    RunOutcome s = run_job(w, arch(a), "search", false);
    EXPECT_LE(s.sim.stats.cycles, g.sim.stats.cycles) << w.name;
    ASSERT_TRUE(s.search.has_value());
    EXPECT_GE(s.search->candidates.size(), 5u);
    EXPECT_GT(s.search->seconds, 0.0);
    EXPECT_FALSE(s.search->chosen.empty());
  }
}

TEST(FusionPolicies, ReportNamesAReasonForEveryRejection) {
  RunOutcome g = run_job(decode_layer(), arch("lpu-asic"), "greedy", false);
  int rejected = 0;
  for (const auto& d : g.comp.schedule.decisions)
    if (!d.fused) {
      ++rejected;
      EXPECT_FALSE(d.reason.empty()) << d.producer << " + " << d.consumer;
    }
  EXPECT_GT(rejected, 0);
}
