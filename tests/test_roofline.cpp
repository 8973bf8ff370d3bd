// Per-kernel roofline attribution (issue 14): every kernel's span splits into categories that
// cover it, rooflines come from the config, a pure weight stream is bandwidth-bound near its
// roofline, the JSON carries the fields, and the figures are deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "jobs/jobs.h"
#include "jobs/op_class.h"
#include "jobs/roofline.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
ArchConfig arch(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml", sets);
}
WorkloadSpec workload(const std::string& name) {
  return resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + name + ".yaml");
}
WorkloadSpec decode_layer(const std::string& name, int64_t context) {
  WorkloadSpec w = workload(name);
  w.layers = 1;
  w.context = context;
  return w;
}
uint64_t sum(const SpanBreakdown& b) {
  uint64_t s = 0;
  for (uint64_t v : breakdown_array(b)) s += v;
  return s;
}
void expect_partition(const RunOutcome& o, const std::string& what) {
  ASSERT_FALSE(o.sim.stats.kernels.empty()) << what;
  for (const auto& k : o.sim.stats.kernels) {
    EXPECT_EQ(sum(k.breakdown), k.cycles) << what << " " << k.name;
    // `other` is what no logged interval covers: a gap in the log, not a category.
    EXPECT_EQ(k.breakdown.other, 0u) << what << " " << k.name;
  }
}
}  // namespace

TEST(Roofline, CategoriesCoverEverySpan) {
  expect_partition(run_job(decode_layer("opt-1.3b-decode", 1040), arch("lpu-asic"), "greedy", false),
                   "opt-1.3b greedy");
  expect_partition(run_job(decode_layer("llama2-7b-decode", 1040), arch("lpu-asic"), "none", false), "llama2-7b none");
  expect_partition(run_job(workload("ln_gelu_add"), arch("lpu-small"), "none", false), "ln_gelu_add none");
  expect_partition(run_job(workload("attention_decode"), arch("lpu-small"), "greedy", false), "attention_decode");
  expect_partition(run_job(workload("tiny-opt-decode"), arch("lpu-small"), "greedy", true), "tiny-opt functional");
  // Weight prefetch and chaining move the SXE's compute window off its issue time.
  expect_partition(run_job(decode_layer("opt-1.3b-decode", 1040),
                           arch("lpu-asic", {"isu.weight_prefetch=true", "isu.chaining=true"}), "greedy", false),
                   "opt-1.3b prefetch+chaining");
}

// Device 0 waits for a token that device 1 sends after a long load: the wait is sync time of
// the kernel it sits in, and the kernel's largest category.
TEST(Roofline, TokenWaitIsSync) {
  Program a = parse_program(
      ".program a\n.kernel 0 k\nvxe.exp [1, 16] lm:0x20000 <- lm:0x30000 [16, 1]\nsync.wait 2\n"
      "vxe.exp [1, 16] lm:0x20000 <- lm:0x30000 [16, 1]\nhalt\n");
  Program b = parse_program(
      ".program b\n.buffer y hbm:0x0 f32[65536] input\n.kernel 0 k\n"
      "dma.load f32 [64, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\nsync.signal 2 dev:0\nhalt\n");
  SimOptions so;
  so.other_devices = {&b};
  SimStats s = simulate(a, arch("lpu-small", {"devices=2"}), so).stats;
  ASSERT_EQ(s.kernels.size(), 1u);
  const KernelStats& k = s.kernels[0];
  EXPECT_EQ(sum(k.breakdown), k.cycles);
  EXPECT_EQ(k.breakdown.other, 0u);
  auto v = breakdown_array(k.breakdown);
  EXPECT_EQ(std::max_element(v.begin(), v.end()) - v.begin(), 3) << "sync is the top category";
  EXPECT_GT(k.breakdown.sync, k.cycles / 2);
}

// GEMV on lpu-asic is one weight stream: HBM-bound, within [93%, 100%] of its roofline, and most of
// its span is bandwidth (the rest: the HBM latency and the pipeline drain at the end).
TEST(Roofline, GemvStreamIsBandwidthBound) {
  RunOutcome o = run_job(workload("gemv"), arch("lpu-asic"), "greedy", false);
  ASSERT_EQ(o.sim.stats.kernels.size(), 1u);
  const KernelStats& k = o.sim.stats.kernels[0];
  EXPECT_EQ(k.bound, "hbm");
  double frac = k.roofline_cycles / static_cast<double>(k.cycles);
  EXPECT_GT(frac, 0.93);  // 96.4% when written: the rest is DMA setup, HBM latency and the drain
  EXPECT_LE(frac, 1.0);
  auto b = breakdown_array(k.breakdown);
  EXPECT_EQ(std::max_element(b.begin(), b.end()) - b.begin(), 0) << "bandwidth is the top category";
  EXPECT_GE(static_cast<double>(k.breakdown.bandwidth), k.roofline_cycles - 1);  // bytes leave no faster than that
}

// The roofline is the config's: halving the HBM efficiency doubles an HBM-bound roofline, and
// the SXE and VXE roofs follow their lanes.
TEST(Roofline, RooflineComesFromTheConfig) {
  RunOutcome a = run_job(workload("gemv"), arch("lpu-asic"), "greedy", false);
  RunOutcome b = run_job(workload("gemv"), arch("lpu-asic", {"hbm.efficiency=0.45"}), "greedy", false);
  const KernelStats &ka = a.sim.stats.kernels[0], &kb = b.sim.stats.kernels[0];
  EXPECT_NEAR(kb.roofline_cycles, 2 * ka.roofline_cycles, 1e-6 * ka.roofline_cycles);
  double bytes = static_cast<double>(ka.hbm_read_bytes + ka.hbm_write_bytes);
  EXPECT_NEAR(ka.roofline_cycles, bytes / (3280.0 / 0.8 * 0.9), 1e-6 * ka.roofline_cycles);
  EXPECT_DOUBLE_EQ(ka.sxe_flops, 2.0 * 4096 * 4096);
  // A compute-bound view: with a 1 GB/s HBM nothing is SXE-bound, with 1 MAC lane the GEMV is.
  RunOutcome c = run_job(workload("gemv"), arch("lpu-asic", {"sxe.mac_trees=1", "sxe.lanes=1"}), "greedy", false);
  EXPECT_EQ(c.sim.stats.kernels[0].bound, "sxe");
  EXPECT_NEAR(c.sim.stats.kernels[0].roofline_cycles, 4096.0 * 4096, 1);
}

// Unfused, every op class of a decode step has kernels of its own.
TEST(Roofline, JsonHasTheFields) {
  RunOutcome o = run_job(decode_layer("opt-1.3b-decode", 1040), arch("lpu-asic"), "none", false);
  nlohmann::json j = o.to_json();
  ASSERT_TRUE(j["kernels"].is_array());
  for (const auto& k : j["kernels"]) {
    for (const char* f : {"name", "op_class", "start_cycle", "end_cycle", "cycles", "hbm_read_bytes", "hbm_write_bytes",
                          "sxe_flops", "vxe_ops", "roofline_cycles", "bound", "roofline_fraction", "breakdown_cycles"})
      EXPECT_TRUE(k.contains(f)) << f;
    for (const char* c : breakdown_names()) EXPECT_TRUE(k["breakdown_cycles"].contains(c)) << c;
  }
  ASSERT_TRUE(j["roofline_classes"].is_array());
  std::set<std::string> classes;
  for (const auto& c : j["roofline_classes"]) {
    for (const char* f : {"op_class", "kernels", "hbm_bytes", "cycles", "roofline_cycles", "roofline_fraction",
                          "breakdown_cycles", "loss_cycles", "top_blocker"})
      EXPECT_TRUE(c.contains(f)) << f;
    classes.insert(c["op_class"].get<std::string>());
  }
  for (const char* c : {"attention", "FFN", "norm", "projection", "LM head"}) EXPECT_TRUE(classes.count(c)) << c;
  for (const char* f : {"compulsory_bytes", "peak_cycles", "sustained_cycles", "of_peak_floor", "of_sustained_floor"})
    EXPECT_TRUE(j["hbm_floor"].contains(f)) << f;
}

// Loss per category sums to span - roofline for HBM-bound kernels (bandwidth has priority).
TEST(Roofline, LossSumsToTheGap) {
  RunOutcome o = run_job(decode_layer("opt-1.3b-decode", 1040), arch("lpu-asic"), "greedy", false);
  for (const auto& k : o.sim.stats.kernels) {
    if (k.bound != "hbm") continue;
    auto l = kernel_loss(k);
    double s = 0;
    for (double v : l) s += v;
    EXPECT_NEAR(s, static_cast<double>(k.cycles) - k.roofline_cycles, 1.0) << k.name;
  }
}

TEST(Roofline, Deterministic) {
  auto once = [] {
    return stats_to_json(run_job(decode_layer("llama2-7b-decode", 1040), arch("lpu-asic"), "greedy", false).sim.stats)
        .dump();
  };
  EXPECT_EQ(once(), once());
}

TEST(Roofline, OpClassesFromTheSharedTable) {
  EXPECT_EQ(node_op_class("l3.fc1"), "FFN");
  EXPECT_EQ(node_op_class("layers.2.q_proj"), "projection");
  EXPECT_EQ(node_op_class("l0.attn_scores"), "attention");
  EXPECT_EQ(kernel_op_class("k7_x", {"l1.ln_1", "l1.q_proj"}), "projection");  // the heaviest class wins
  EXPECT_EQ(kernel_op_class("k12_lm_head", {}), "LM head");
  EXPECT_EQ(op_class_order().back(), "other");
}

// Without the per-kernel breakdown (what lpu generate asks for) every other figure is the same
// and the breakdowns are left empty.
TEST(Roofline, BreakdownOffChangesNothingElse) {
  RunOutcome o = run_job(decode_layer("opt-1.3b-decode", 1040), arch("lpu-asic"), "greedy", false);
  SimOptions off;
  off.kernel_breakdown = false;
  SimStats s = simulate(o.comp.code.program, o.arch, off).stats;
  ASSERT_EQ(s.kernels.size(), o.sim.stats.kernels.size());
  ASSERT_GE(s.kernels.size(), 3u);  // an OPT-1.3B layer: norm and projections, attention, the rest
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    EXPECT_EQ(sum(s.kernels[k].breakdown), 0u);
    EXPECT_GT(sum(o.sim.stats.kernels[k].breakdown), 0u);
    s.kernels[k].breakdown = o.sim.stats.kernels[k].breakdown;
  }
  EXPECT_EQ(stats_to_json(s).dump(), stats_to_json(o.sim.stats).dump());
}
