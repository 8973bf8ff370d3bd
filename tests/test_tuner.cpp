// The tuner (tuner/, issue 14 item 5): it finds a gain where one exists, never loses to greedy,
// is deterministic, says when it changed the arch config, and its policies are the ones the
// CLI, sweeps and benches accept.
#include <gtest/gtest.h>

#include "jobs/jobs.h"
#include "policy_registry.h"
#include "support/error.h"
#include "sweep/sweep_spec.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
ArchConfig arch(const std::string& name) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml");
}
WorkloadSpec file(const std::string& name) {
  return resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + name + ".yaml");
}
// GPT-2 decode (2048 cached tokens, fp16) cut to two layers plus the LM head: an LLM decode
// step small enough for the suite.
WorkloadSpec gpt2_two_layers() {
  WorkloadSpec w = file("gpt2-decode");
  w.layers = 2;
  return w;
}
}  // namespace

// On an LLM decode step the in-order ISU serialises dependent kernels; weight prefetch and
// chaining overlap them, so search-isu must find a gain, name the keys it changed, and the
// run's own simulation (on the changed config) must give the cycles the search reported.
TEST(Tuner, FindsAGainOnAnLlmDecodeStep) {
  ArchConfig a = arch("lpu-asic");
  ASSERT_FALSE(a.isu.chaining);
  RunOutcome g = run_job(gpt2_two_layers(), a, "greedy", false);
  RunOutcome s = run_job(gpt2_two_layers(), a, "search-isu", false);
  ASSERT_TRUE(s.search.has_value());
  EXPECT_EQ(s.search->greedy_cycles, g.sim.stats.cycles);
  EXPECT_GT(s.search->gain_cycles(), 0);
  EXPECT_GT(s.search->gain_percent(), 0.0);
  EXPECT_LT(s.sim.stats.cycles, g.sim.stats.cycles);
  EXPECT_EQ(s.sim.stats.cycles, s.search->best_cycles);
  EXPECT_FALSE(s.search->arch_changes.empty());
  EXPECT_TRUE(s.arch.isu.chaining || s.arch.isu.weight_prefetch);
  nlohmann::json j = s.to_json()["search"];
  EXPECT_EQ(j["gain_cycles"].get<int64_t>(), s.search->gain_cycles());
  EXPECT_FALSE(j["arch_changes"].empty());
  EXPECT_TRUE(j["candidates"][0]["settings"].contains("isu.chaining"));
}

// `search` is compiler-only: the arch config is the one given, every candidate keeps its ISU
// options, and nothing is reported changed.
TEST(Tuner, SearchKeepsTheArchConfig) {
  ArchConfig a = arch("lpu-asic");
  RunOutcome s = run_job(gpt2_two_layers(), a, "search", false);
  ASSERT_TRUE(s.search.has_value());
  EXPECT_TRUE(s.search->arch_changes.empty());
  EXPECT_EQ(s.arch.isu.chaining, a.isu.chaining);
  EXPECT_EQ(s.arch.isu.weight_prefetch, a.isu.weight_prefetch);
  for (const auto& c : s.search->candidates) {
    EXPECT_EQ(c.settings.chaining, a.isu.chaining) << c.name;
    EXPECT_EQ(c.settings.weight_prefetch, a.isu.weight_prefetch) << c.name;
  }
  EXPECT_GE(s.search->candidates.size(), 12u);
  EXPECT_GE(s.search->gain_cycles(), 0);
}

// Greedy is candidate 0 and stays choosable, so neither policy is ever slower than greedy.
TEST(Tuner, NeverLosesToGreedy) {
  std::vector<std::pair<WorkloadSpec, std::string>> cases = {{file("ln_gelu_add"), "lpu-small"},
                                                             {file("softmax"), "lpu-small"},
                                                             {file("tiny-opt-decode"), "lpu-small"},
                                                             {gpt2_two_layers(), "lpu-asic"}};
  for (const auto& [w, a] : cases)
    for (const char* policy : {"search", "search-isu"}) {
      RunOutcome g = run_job(w, arch(a), "greedy", false);
      RunOutcome s = run_job(w, arch(a), policy, false);
      ASSERT_TRUE(s.search.has_value());
      EXPECT_EQ(s.search->candidates.front().name, "greedy");
      EXPECT_EQ(s.search->greedy_cycles, g.sim.stats.cycles) << w.name << " " << policy;
      EXPECT_LE(s.sim.stats.cycles, g.sim.stats.cycles) << w.name << " " << policy;
      EXPECT_GE(s.search->gain_cycles(), 0) << w.name << " " << policy;
    }
}

// Same inputs, same candidates in the same order, same cycles, same choice.
TEST(Tuner, IsDeterministic) {
  RunOutcome a = run_job(file("tiny-opt-decode"), arch("lpu-small"), "search-isu", false);
  RunOutcome b = run_job(file("tiny-opt-decode"), arch("lpu-small"), "search-isu", false);
  ASSERT_EQ(a.search->candidates.size(), b.search->candidates.size());
  for (size_t i = 0; i < a.search->candidates.size(); ++i) {
    EXPECT_EQ(a.search->candidates[i].name, b.search->candidates[i].name);
    EXPECT_EQ(a.search->candidates[i].cycles, b.search->candidates[i].cycles) << a.search->candidates[i].name;
  }
  EXPECT_EQ(a.search->chosen, b.search->chosen);
  EXPECT_EQ(a.sim.stats.cycles, b.sim.stats.cycles);
}

// One registry: the compiler's policies, then the tuner's; sweeps accept every one of them
// (`fusion: search` included) and name them all when a policy is unknown.
TEST(Tuner, OneRegistryForCliSweepsAndBenches) {
  std::vector<std::string> names;
  for (const auto& p : policy_registry()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"none", "greedy", "search", "search-isu"}));
  EXPECT_FALSE(find_policy("greedy")->simulates);
  EXPECT_TRUE(find_policy("search")->simulates);
  EXPECT_FALSE(find_policy("search")->changes_arch);
  EXPECT_TRUE(find_policy("search-isu")->changes_arch);
  SweepSpec s = load_sweep_string("workloads: [ln_gelu_add]\nfusion: [greedy, search, search-isu]\n", "s.yaml");
  EXPECT_EQ(s.policies, (std::vector<std::string>{"greedy", "search", "search-isu"}));
  try {
    load_sweep_string("workloads: [ln_gelu_add]\nfusion: [fastest]\n", "s.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("none, greedy, search, search-isu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_job(file("softmax"), arch("lpu-small"), "fastest", false), InputError);
}
