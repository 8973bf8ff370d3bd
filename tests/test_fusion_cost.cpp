// The fusion cost model (issue 13): no fusion may add HBM traffic. Greedy (and so search,
// built on it) must never move more bytes, nor take longer, than one kernel per op (`none`),
// on every built-in workload, on batched and prefill shapes, and the model's per-kernel
// traffic must be what the simulator measures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "codegen/lpu_codegen.h"
#include "jobs/jobs.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;
namespace fs = std::filesystem;

namespace {
ArchConfig arch(const std::string& name) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml");
}
uint64_t traffic(const RunOutcome& o) { return o.sim.stats.hbm_read_bytes + o.sim.stats.hbm_write_bytes; }

void expect_greedy_no_worse(const WorkloadSpec& w, const ArchConfig& a) {
  RunOutcome n = run_job(w, a, "none", false);
  RunOutcome g = run_job(w, a, "greedy", false);
  EXPECT_LE(traffic(g), traffic(n)) << w.name << " on " << a.name;
  EXPECT_LE(g.sim.stats.cycles, n.sim.stats.cycles) << w.name << " on " << a.name;
}

WorkloadSpec model(const std::string& m, const std::string& phase, int64_t seq, int64_t batch, int64_t layers) {
  WorkloadSpec w;
  w.model = m;
  w.phase = phase;
  w.seq_len = seq;
  w.batch = batch;
  w.layers = layers;
  if (phase == "decode") w.context = 512;
  w.dtype = DType::f16;
  w.name = lpu::strcat(m, "-", phase, "-b", batch, "-s", seq, "-l", layers);
  return w;
}

// A batched MLP block as PyTorch exports it: [4, 16, 256] -> norm -> up -> gelu -> down (+x).
const char* kBatchedMlp = R"(graph batched_mlp {
  %x: f32[4, 16, 256] = placeholder
  %ln_w: f32[256] = parameter
  %ln_b: f32[256] = parameter
  %w1: f32[256, 1024] = parameter
  %w2: f32[1024, 256] = parameter
  %n: f32[4, 16, 256] = layer_norm(%x, %ln_w, %ln_b) {eps = 1e-05}
  %h: f32[4, 16, 1024] = matmul(%n, %w1)
  %g: f32[4, 16, 1024] = gelu(%h)
  %o: f32[4, 16, 256] = matmul(%g, %w2)
  %y: f32[4, 16, 256] = add(%o, %x)
  output(%y)
}
)";
}  // namespace

// Every workload file: the LLMs on the ASIC preset (the only one whose HBM holds them all),
// the microbenchmarks on both.
TEST(FusionCost, GreedyNeverWorseThanNoneOnEveryWorkloadFile) {
  for (const auto& e : fs::directory_iterator(std::string(LPU_SOURCE_DIR) + "/workloads")) {
    if (e.path().extension() != ".yaml") continue;
    WorkloadSpec w = resolve_workload(e.path().string());
    expect_greedy_no_worse(w, arch("lpu-asic"));
    if (w.model.empty() || w.model == "tiny-opt") expect_greedy_no_worse(w, arch("lpu-small"));
  }
}

// Prefill and batched shapes (the built-in LLMs run batch 1; the MLP is batched), where a fused matmul prologue re-streams the weights once per
// tile of rows: before the cost model, greedy moved 2.7x the bytes of none on OPT-13B prefill.
TEST(FusionCost, GreedyNeverWorseThanNoneOnPrefillAndBatches) {
  ArchConfig asic = arch("lpu-asic");
  expect_greedy_no_worse(model("opt-13b", "prefill", 128, 1, 2), asic);
  expect_greedy_no_worse(model("llama2-7b", "prefill", 64, 1, 2), asic);
  expect_greedy_no_worse(model("gpt2", "prefill", 128, 1, 2), asic);
  expect_greedy_no_worse(model("tiny-llama", "prefill", 16, 1, -1), arch("lpu-small"));
  fs::path dir = fs::temp_directory_path() / lpu::strcat("lpu_fusion_cost_", ::getpid());
  fs::create_directories(dir);
  fs::path mlp = dir / "batched_mlp.txt";
  std::ofstream(mlp) << kBatchedMlp;
  WorkloadSpec w = resolve_workload(mlp.string());
  expect_greedy_no_worse(w, arch("lpu-small"));
  expect_greedy_no_worse(w, asic);
  fs::remove_all(dir);
}

// The model is the code generator's tiling: what it predicts per kernel is what the simulator
// counts per kernel, for fused and unfused schedules.
TEST(FusionCost, PredictedKernelTrafficIsSimulatedTraffic) {
  std::vector<std::pair<WorkloadSpec, std::string>> cases = {
      {resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/ln_gelu_add.yaml"), "lpu-small"},
      {resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/tiny-opt-decode.yaml"), "lpu-small"},
      {model("opt-13b", "prefill", 128, 1, 1), "lpu-asic"}};
  for (const auto& [w, a] : cases)
    for (const std::string policy : {"none", "greedy"}) {
      ArchConfig ac = arch(a);
      RunOutcome o = run_job(w, ac, policy, false);
      CodegenOptions cg = compile_options_for(ac, policy).codegen;
      ASSERT_EQ(o.sim.stats.kernels.size(), o.comp.schedule.kernels.size());
      for (size_t k = 0; k < o.comp.schedule.kernels.size(); ++k) {
        const KernelStats& ks = o.sim.stats.kernels[k];
        EXPECT_EQ(kernel_cost(o.comp.loop_ir, o.comp.schedule.kernels[k], cg).hbm_bytes,
                  static_cast<int64_t>(ks.hbm_read_bytes + ks.hbm_write_bytes))
            << w.name << " " << policy << " kernel " << ks.name;
      }
    }
}

// Every rejection by the cost model says what it would have cost.
TEST(FusionCost, RejectionsNameTheBytes) {
  RunOutcome g = run_job(model("opt-13b", "prefill", 128, 1, 1), arch("lpu-asic"), "greedy", false);
  int adds = 0;
  for (const auto& d : g.comp.schedule.decisions)
    if (!d.fused && d.reason.rfind("adds traffic", 0) == 0) {
      ++adds;
      EXPECT_GT(d.fused_bytes, d.apart_bytes) << d.producer << " + " << d.consumer;
    }
  EXPECT_GT(adds, 0);
}

// search tries tiling variants that the fusion cost model does not price (it prices fusions at
// the default tiling); it must keep the same promise itself. On the batched MLP it used to
// choose greedy/max_tile_rows=4, 3.1x the bytes of none on lpu-small: that candidate must now
// be rejected with the bytes named, and the chosen one move no more than none.
TEST(FusionCost, SearchNeverChoosesMoreBytesThanNone) {
  fs::path dir = fs::temp_directory_path() / lpu::strcat("lpu_search_cost_", ::getpid());
  fs::create_directories(dir);
  fs::path mlp = dir / "batched_mlp.txt";
  std::ofstream(mlp) << kBatchedMlp;
  WorkloadSpec w = resolve_workload(mlp.string());
  for (const std::string a : {"lpu-small", "lpu-asic"}) {
    RunOutcome n = run_job(w, arch(a), "none", false);
    RunOutcome s = run_job(w, arch(a), "search", false);
    ASSERT_TRUE(s.search.has_value());
    uint64_t none_bytes = n.sim.stats.hbm_read_bytes + n.sim.stats.hbm_write_bytes;
    EXPECT_LE(s.sim.stats.hbm_read_bytes + s.sim.stats.hbm_write_bytes, none_bytes) << a;
    size_t rejected = 0;
    for (const auto& c : s.search->candidates) {
      if (c.name == "none") {
        EXPECT_EQ(c.hbm_bytes, none_bytes) << a;
      }
      if (!c.rejected.empty()) {
        ++rejected;
        EXPECT_GT(c.hbm_bytes, none_bytes) << a << " " << c.name;
        EXPECT_NE(c.rejected.find("more than none's"), std::string::npos) << c.rejected;
        EXPECT_NE(c.name, s.search->chosen) << a;
      }
    }
    if (a == "lpu-small") {
      EXPECT_GT(rejected, 0u) << "the bound rejected nothing: the test no longer shows it";
    }
  }
  fs::remove_all(dir);
}
