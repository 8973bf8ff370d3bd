// Serving on the simulator (workbench/servesim): a request alone costs what `lpu generate`
// says, step by step; the step-cost model equals exact simulation at the points it simulated
// and stays close between them; a run is deterministic; ragged steps compile.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "generate/generate.h"
#include "generate/step_runner.h"
#include "servesim/serve_job.h"
#include "servesim/sim_step_cost.h"
#include "servesim/step_workload.h"

using namespace lpu;

namespace {

ArchConfig small_arch() { return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml"); }

// Records every step's cost in order.
class Recorder : public serve::StepCostModel {
 public:
  explicit Recorder(serve::StepCostModel& m) : m_(m) {}
  serve::StepCost cost(const serve::StepBatch& b) override {
    serve::StepCost c = m_.cost(b);
    times.push_back(c.time_s);
    return c;
  }
  std::vector<double> times;

 private:
  serve::StepCostModel& m_;
};

serve::ServeResult serve_one(const WorkloadSpec& w, serve::StepCostModel& cost, int64_t prompt, int64_t output) {
  serve::ClusterConfig c;
  c.pool.cost = &cost;
  c.pool.scheduler.chunked_prefill = false;
  c.pool.scheduler.max_num_batched_tokens = 4096;
  (void)w;
  return serve::simulate_serving({{0, 0.0, prompt, output, 0}}, c);
}

}  // namespace

TEST(ServeSim, OneRequestAloneEqualsLpuGenerateStepByStep) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");
  GenerateOptions go;
  go.prompt_len = 12;
  go.gen_len = 6;
  CompileCache gen_cache;
  GenerateResult g = run_generate(w, arch, go, gen_cache);

  CompileCache cache;
  StepRunner runner(arch, "greedy", cache);
  ExactStepCost exact(w, runner, true);  // as --exact: symbolic programs, as generate's
  Recorder rec(exact);
  serve::ServeResult r = serve_one(w, rec, 12, 6);
  ASSERT_EQ(rec.times.size(), g.steps.size());
  for (size_t i = 0; i < g.steps.size(); ++i) EXPECT_EQ(rec.times[i], g.steps[i].latency_s) << "step " << i + 1;
  const serve::RequestRecord& q = r.requests.at(0);
  EXPECT_EQ(q.ttft_s(), g.ttft_s());
  EXPECT_DOUBLE_EQ(q.e2e_s(), g.total_latency_s());
}

// --exact's programs symbolic in the cached contexts (StepRunner::run_in_sequence) give every
// step of a loaded run exactly the time compiling each step gives, with far fewer compiles.
TEST(ServeSim, ExactRunWithSymbolicProgramsEqualsCompilingEveryStep) {
  // OPT-1.3B's shapes at two layers: the tiny models' LMU layouts move with every context, so
  // their templates rarely hold (docs/generate.md); a real model's do.
  const ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-asic.yaml");
  WorkloadSpec w = resolve_workload("opt-1.3b");
  w.layers = 2;
  serve::RequestList reqs;
  // Alone for most of their decodes, two at a time for a while (a batch of two changes often).
  for (int64_t i = 0; i < 4; ++i) reqs.push_back({i, 0.004 * static_cast<double>(i), 40 + 9 * i, 60 - 3 * i, 0});
  auto run = [&](bool in_sequence, StepRunner& runner) {
    ExactStepCost exact(w, runner, in_sequence);
    Recorder rec(exact);
    serve::ClusterConfig c;
    c.pool.cost = &rec;
    c.pool.scheduler.chunk_size = 8;
    serve::ServeResult r = serve::simulate_serving(reqs, c);
    EXPECT_EQ(r.summary.completed, 4);
    return rec.times;
  };
  CompileCache plain_cache, sym_cache;
  StepRunner plain(arch, "greedy", plain_cache), sym(arch, "greedy", sym_cache);
  std::ostringstream explained;
  sym.set_explain([&](const std::string& line) { explained << line << "\n"; });
  const std::vector<double> want = run(false, plain), got = run(true, sym);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "step " << i + 1;
  const SymbolicCounters& n = sym.symbolic_counters();
  std::printf("%zu steps: %zu compiles plain, %zu with symbolic programs (%zu templates, %zu instantiated)\n",
              want.size(), plain.compiles(), sym.compiles(), n.templates, n.instantiated);
  EXPECT_GT(n.templates, 0u);
  EXPECT_GT(n.instantiated, want.size() / 3) << explained.str();
  if (std::getenv("LPU_EXPLAIN")) std::cout << explained.str();
  EXPECT_LT(sym.compiles(), plain.compiles());
  EXPECT_NE(explained.str().find("step "), std::string::npos);  // the recompiles are explained
}

TEST(ServeSim, RaggedStepCompilesAndCostsMoreThanItsLargestSequence) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");
  CompileCache cache;
  StepRunner runner(arch, "greedy", cache);
  serve::StepBatch one{{{0, 40, 1, false}}};
  serve::StepBatch mixed{{{0, 40, 1, false}, {1, 7, 1, false}, {2, 0, 9, true}}};
  WorkloadSpec rw = step_workload_of(w, mixed);
  ASSERT_EQ(rw.ragged.size(), 3u);
  EXPECT_EQ(rw.tokens(), 11);
  const StepFigures a = runner.run(step_workload_of(w, one)), b = runner.run(rw);
  EXPECT_GT(b.latency_s, a.latency_s);
  EXPECT_GT(b.hbm_write_bytes, a.hbm_write_bytes);  // three sequences' new keys and values
}

TEST(ServeSim, FittedModelEqualsExactSimulationAtItsPoints) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");  // 2 layers: points are whole-model simulations
  CompileCache cache;
  StepRunner runner(arch, "greedy", cache);
  ExactStepCost exact(w, runner, false);
  FittedStepCostOptions fo;
  fo.context_step = 16;
  FittedStepCost fitted(w, runner, "test", fo);
  const std::vector<serve::StepBatch> points = {
      {{{0, 0, 8, true}}},                                                         // a prefill of 8 (grid m = 8, S = 1)
      {{{0, 32, 1, false}}},                                                       // one decode on a grid context
      {{{0, 1, 1, false}, {1, 1, 1, false}, {2, 1, 1, false}}},                    // S = 3 decodes on one-token caches
      {{{0, 1, 1, false}, {1, 1, 1, false}, {2, 1, 1, false}, {3, 0, 12, true}}},  // m = 12, S = 4, k = 1
      {{{0, 1, 1, false}, {1, 0, 7, true}, {2, 0, 6, true}}},  // m = 12, S = 3, k = 2: the probe itself
      {{{0, 48, 4, false}}},                                   // a chunk on a cached prefix
  };
  for (size_t i = 0; i < points.size(); ++i) {
    const double t = exact.cost(points[i]).time_s, f = fitted.cost(points[i]).time_s;
    EXPECT_NEAR(f, t, t * 1e-12) << "point " << i;
  }
}

TEST(ServeSim, FittedModelIsCloseBetweenItsPoints) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");
  CompileCache cache;
  StepRunner runner(arch, "greedy", cache);
  ExactStepCost exact(w, runner, false);
  FittedStepCostOptions fo;
  fo.context_step = 32;
  FittedStepCost fitted(w, runner, "test", fo);
  // Decodes at contexts off the grid, a chunk between grid sizes, two uneven chunks.
  const std::vector<serve::StepBatch> steps = {
      {{{0, 37, 1, false}, {1, 101, 1, false}, {2, 5, 1, false}, {3, 77, 1, false}, {4, 140, 1, false}}},
      {{{0, 90, 1, false}, {1, 0, 21, true}}},
      {{{0, 60, 1, false}, {1, 0, 30, true}, {2, 0, 9, true}}},
  };
  double worst = 0;
  for (const auto& b : steps) {
    const double t = exact.cost(b).time_s, f = fitted.cost(b).time_s;
    worst = std::max(worst, std::abs(f - t) / t);
    std::printf("step of %zu sequences: model %.6g s, exact %.6g s\n", b.seqs.size(), f, t);
  }
  std::printf("worst relative error of the step-cost model on %zu ragged steps: %.4f%%\n", steps.size(), worst * 100);
  EXPECT_LT(worst, 0.03);
}

TEST(ServeSim, AJobIsDeterministicAndItsMemoGivesTheSameAnswer) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");
  ServeJobOptions o;
  o.generator.requests = 12;
  o.generator.arrival.rate = 50;
  o.generator.prompt = serve::parse_length_spec("uniform:4:40", "--prompt");
  o.generator.output = serve::parse_length_spec("uniform:1:24", "--output");
  o.scheduler.chunk_size = 16;
  o.error_samples = 3;
  o.context_step = 16;
  const std::string memo = (std::filesystem::temp_directory_path() / "lpu_test_servesim_memo.json").string();
  std::filesystem::remove(memo);
  o.cost_cache = memo;
  auto strip = [](const nlohmann::ordered_json& j) {
    EXPECT_FALSE(j.contains("wall"));
    return j.dump();
  };
  ServeJobResult a = run_serve_job(w, arch, o);
  EXPECT_GT(a.points_simulated, 0u);
  ServeJobResult b = run_serve_job(w, arch, o);  // every point from the memo
  EXPECT_EQ(b.points_simulated, 0u);
  EXPECT_EQ(b.points_loaded, a.points_simulated);
  EXPECT_EQ(strip(a.to_json()), strip(b.to_json()));
  EXPECT_EQ(a.result.summary.completed, 12);
  EXPECT_EQ(a.error.samples, 3);
  EXPECT_LT(a.error.max, 0.03);
  // Little's law on the run's own numbers: L = lambda W over the run's window.
  const auto& s = a.result.summary;
  EXPECT_NEAR(s.mean_in_system, s.requests_per_s * s.e2e_s.mean, 1e-9 * s.mean_in_system);
  std::filesystem::remove(memo);
}

TEST(ServeSim, RequestsPastTheModelsPositionsAreRefusedNamingTheLine) {
  const ArchConfig arch = small_arch();
  const WorkloadSpec w = resolve_workload("tiny-llama");  // max_position 256
  const std::string trace = (std::filesystem::temp_directory_path() / "lpu_test_servesim_trace.csv").string();
  std::ofstream(trace) << "arrival_s,prompt_tokens,output_tokens\n0.0,10,10\n0.5,250,10\n";
  ServeJobOptions o;
  o.trace_file = trace;
  try {
    run_serve_job(w, arch, o);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(trace + ":3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_position 256"), std::string::npos) << e.what();
  }
  std::filesystem::remove(trace);
}

// Greedy fusion once closed a cycle between kernels that no node-level path shows (two sibling
// slices fused horizontally, one fed by the merged group, one feeding it): LLaMA-2-7B's ragged
// step of 15 decodes and a 24-token chunk failed with "kernel graph has a cycle".
TEST(ServeSim, RaggedStepsOfManySequencesSchedule) {
  const ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-asic.yaml");
  WorkloadSpec w = resolve_workload("llama2-7b");
  w.layers = 1;
  CompileCache cache;
  StepRunner runner(arch, "greedy", cache);
  serve::StepBatch b;
  for (int64_t i = 0; i < 15; ++i) b.seqs.push_back({i, 1, 1, false});
  b.seqs.push_back({15, 0, 24, true});
  EXPECT_GT(runner.run(step_workload_of(w, b)).latency_s, 0);
}

// The terminal report says when requests arrived more than twice as fast as they were served
// (the figures above it then measure a queue), and what to change.
TEST(ServeSim, TheReportSaysWhenRequestsArriveFasterThanTheyAreServed) {
  ServeJobResult r;
  for (int64_t i = 10; i >= 0; --i) r.requests.push_back({i, 0.1 * static_cast<double>(i), 8, 8, 0});  // 10 req/s
  r.result.summary.requests_per_s = 4.9;
  const std::string over = r.summary();
  EXPECT_NE(over.find("overloaded: requests arrived at 10.000 req/s and were served at 4.900 req/s"), std::string::npos)
      << over;
  EXPECT_NE(over.find("--find-rate"), std::string::npos) << over;
  r.result.summary.requests_per_s = 5.1;
  EXPECT_EQ(r.summary().find("overloaded"), std::string::npos);
  r.requests.resize(1);  // one arrival: no rate to compare
  r.result.summary.requests_per_s = 0.001;
  EXPECT_EQ(r.summary().find("overloaded"), std::string::npos);
}
