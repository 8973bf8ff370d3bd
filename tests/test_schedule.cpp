#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/lpu_codegen.h"
#include "driver/compile.h"
#include "jobs/jobs.h"
#include "ref/reference.h"
#include "simulator.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
Compilation compile_builtin(const std::string& model, const std::string& policy, int64_t lmu = 256 * 1024,
                            int64_t tokens = 64, int64_t width = 256) {
  WorkloadSpec w;
  w.name = model;
  w.model = model;
  w.seq_len = tokens;
  for (const auto& [k, v] : find_model_builder(model)->params) w.params[k] = width;
  CompileOptions o;
  o.fusion = policy;
  o.codegen.lmu_bytes = lmu;
  return compile_graph(build_graph(w), o);
}
}  // namespace

TEST(Schedule, NoneIsOneKernelPerLoopNode) {
  Compilation c = compile_builtin("ln_gelu_add", "none");
  EXPECT_EQ(c.schedule.kernels.size(), c.loop_ir.nodes.size());
  // Every intermediate is written to HBM.
  for (const auto& k : c.schedule.kernels) EXPECT_EQ(k.hbm_outputs.size(), 1u);
}

// layer_norm -> gelu -> add fuses into one kernel: statistics (reductions) with the
// normalising pointwise ops, and the whole gelu chain, all row-aligned.
TEST(Schedule, GreedyFusesLayerNormGeluAddIntoOneKernel) {
  Compilation c = compile_builtin("ln_gelu_add", "greedy");
  ASSERT_EQ(c.schedule.kernels.size(), 1u);
  EXPECT_EQ(c.schedule.kernels[0].hbm_outputs, std::vector<std::string>{"residual"});
}

TEST(Schedule, SoftmaxAndRmsNormFuseToOneKernel) {
  EXPECT_EQ(compile_builtin("softmax", "greedy").schedule.kernels.size(), 1u);
  EXPECT_EQ(compile_builtin("rms_norm", "greedy").schedule.kernels.size(), 1u);
}

TEST(Schedule, EveryRejectionHasAReason) {
  // A small local memory forces rejections.
  Compilation c = compile_builtin("ln_gelu_add", "greedy", 24 * 1024, 64, 1024);
  int rejected = 0;
  for (const auto& d : c.schedule.decisions) {
    if (d.fused) continue;
    ++rejected;
    EXPECT_FALSE(d.reason.empty()) << d.producer << " + " << d.consumer;
  }
  EXPECT_GT(rejected, 0);
  bool overflow = false;
  for (const auto& d : c.schedule.decisions) overflow |= d.reason.find("local-memory overflow") != std::string::npos;
  EXPECT_TRUE(overflow);
  EXPECT_GT(c.schedule.kernels.size(), 1u);
}

TEST(Schedule, CompulsoryTrafficIsInputsPlusOutputs) {
  Compilation c = compile_builtin("ln_gelu_add", "greedy", 256 * 1024, 64, 256);
  // x [64, 256] + weight [256] + bias [256] read, out [64, 256] written, fp32.
  EXPECT_EQ(c.compulsory_hbm_bytes, (64 * 256 * 2 + 256 * 2) * 4);
}

// The schedule verifier (run by the driver after every scheduling) on broken schedules.
TEST(Schedule, VerifierNamesTheKernelAndTheRule) {
  Compilation c = compile_builtin("softmax", "none");
  ASSERT_GE(c.schedule.kernels.size(), 3u);
  EXPECT_NO_THROW(verify_schedule(c.loop_ir, c.schedule));
  auto why = [&](Schedule s) {
    try {
      verify_schedule(c.loop_ir, s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  using ::testing::HasSubstr;
  Schedule dropped = c.schedule;
  dropped.kernels.pop_back();
  EXPECT_THAT(why(dropped), HasSubstr("is in no kernel"));
  Schedule twice = c.schedule;
  twice.kernels[1].nodes.push_back(twice.kernels[0].nodes[0]);
  EXPECT_THAT(why(twice), HasSubstr("is also in kernel " + c.schedule.kernels[0].name));
  Schedule swapped = c.schedule;
  std::swap(swapped.kernels[0], swapped.kernels[1]);
  EXPECT_THAT(why(swapped), HasSubstr("before any kernel writes it"));
  Schedule kept_local = c.schedule;
  kept_local.kernels[0].hbm_outputs.clear();
  EXPECT_THAT(why(kept_local), HasSubstr("keeps local (not in its hbm_outputs)"));
  Schedule foreign = c.schedule;
  foreign.kernels[0].hbm_outputs.push_back(c.loop_ir.nodes[foreign.kernels[1].nodes[0]].out());
  EXPECT_THAT(why(foreign), HasSubstr("is not written by the kernel"));
}

// A concatenation along the columns (each part a column window of the same rows) joins in local
// memory: greedy makes one kernel of its parts and its reader, which moves only the input and the
// output, and the simulated output equals the reference executor's. Along the rows it does not
// (the parts have fewer rows than the reader): the cat goes through HBM.
TEST(Schedule, ColumnConcatenationJoinsRowConcatenationDoesNot) {
  auto cat_graph = [](int64_t dim) {
    Graph g("cat");
    NodeId x = g.add_placeholder("x", TensorType{DType::f32, {8, 16}});
    NodeId y = g.add_placeholder("y", TensorType{DType::f32, {8, 16}});
    NodeId a = g.add_call("neg", {x}, {}, "a");
    NodeId b = g.add_call("exp", {y}, {}, "b");
    NodeId c = g.add_call("cat", {a, b}, {{"dim", dim}}, "c");
    g.set_output({g.add_call("mul", {c, c}, {}, "out")});
    return g;
  };
  CompileOptions o;
  o.fusion = "greedy";
  o.codegen.lmu_bytes = 64 * 1024;
  Compilation cols = compile_graph(cat_graph(1), o);
  ASSERT_EQ(cols.schedule.kernels.size(), 1u);
  EXPECT_EQ(cols.schedule.kernels[0].hbm_outputs, std::vector<std::string>{"out"});
  size_t windows = 0;
  for (const Instruction& in : cols.code.program.code) windows += in.lm_rs == 32;
  EXPECT_EQ(windows, 2u);  // neg and exp each compute into their half of the joined row
  const ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  TensorMap in = make_random_inputs(cols.core, 3);
  SimOptions so;
  so.functional = true;
  SimResult r = simulate(cols.code.program, arch, so, &in);
  std::vector<Tensor> ref = run_reference(cols.core, in);
  ASSERT_EQ(ref.size(), 1u);
  const Tensor& sim = r.outputs.at("out");
  ASSERT_EQ(sim.data.size(), ref[0].data.size());
  for (size_t i = 0; i < sim.data.size(); ++i) EXPECT_NEAR(sim.data[i], ref[0].data[i], 1e-5 * (1 + std::abs(ref[0].data[i])));

  Compilation rows = compile_graph(cat_graph(0), o);
  bool through_hbm = false;
  for (const Kernel& k : rows.schedule.kernels)
    for (const std::string& b : k.hbm_outputs) through_hbm |= b == "c";
  EXPECT_TRUE(through_hbm);
  bool reason = false;
  for (const auto& d : rows.schedule.decisions) reason |= d.reason.find("different iteration space") != std::string::npos;
  EXPECT_TRUE(reason);
}

// The verifier refuses a kernel that reads a concatenation before all its parts are in it.
TEST(Schedule, VerifierRefusesAConcatenationReadBeforeAllItsParts) {
  Graph g("cat");
  NodeId x = g.add_placeholder("x", TensorType{DType::f32, {8, 16}});
  NodeId c = g.add_call("cat", {g.add_call("neg", {x}, {}, "a"), g.add_call("exp", {x}, {}, "b")}, {{"dim", int64_t{1}}}, "c");
  g.set_output({g.add_call("mul", {c, c}, {}, "out")});
  CompileOptions o;
  o.fusion = "none";
  Compilation comp = compile_graph(g, o);
  // Loop nodes in order: a, b, c_part0, c_part1, out. One kernel of a, c_part0 and out (c_part1
  // in another, before it) reads c with one of its two writers.
  Schedule s = comp.schedule;
  ASSERT_EQ(s.kernels.size(), 5u);
  Kernel merged = s.kernels[0];
  merged.nodes = {s.kernels[0].nodes[0], s.kernels[2].nodes[0], s.kernels[4].nodes[0]};
  merged.hbm_outputs = {"out"};
  Schedule broken;
  broken.policy = "test";
  broken.kernels = {s.kernels[1], s.kernels[3], merged};
  try {
    verify_schedule(comp.loop_ir, broken);
    FAIL() << "verify_schedule accepted a partial concatenation";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("after 1 of its 2 writers in this kernel"));
  }
}

// A path back into a candidate's fused kernel can run through a group that spans the
// candidate, one member before its last node and one after: the cycle search must not stop at
// the candidate's last node (schedule.cpp, cycle_reason). Prefill chunks on a cached context
// fused such cycles on lpu-small and the compile failed with an internal error, among them
// every `lpu serve` of OPT-1.3B there (its step-cost probe of a 96-token chunk on 1,024 cached
// tokens). These are the shapes that failed.
TEST(Schedule, GreedyFusesNoCycleThroughAGroupSpanningTheCandidate) {
  const ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  const CompileOptions co = compile_options_for(a, "greedy");
  struct Shape {
    const char* model;
    int64_t tokens, context;
  };
  for (const Shape& s : {Shape{"opt-1.3b", 80, 1024}, Shape{"opt-1.3b", 96, 1024}, Shape{"opt-1.3b", 72, 1500},
                         Shape{"opt-1.3b", 200, 1500}, Shape{"llama2-7b", 136, 1024}, Shape{"llama2-7b", 200, 1500}}) {
    WorkloadSpec w = resolve_workload(std::string(s.model) + "-decode");
    w.seq_len = s.tokens;
    w.context = s.context;
    w.layers = 1;
    const std::string shape = strcat(s.model, " ", s.tokens, " tokens on ", s.context);
    Compilation c;
    ASSERT_NO_THROW(c = compile_graph(build_graph(w), co)) << shape;
    EXPECT_NO_THROW(verify_schedule(c.loop_ir, c.schedule)) << shape;
    // The search found the path it used to miss: some pair is refused for it.
    size_t cycles = 0;
    for (const auto& d : c.schedule.decisions) cycles += d.reason.find("would create a cycle") != std::string::npos;
    EXPECT_GT(cycles, 0u) << shape;
  }
}

// The kind of shape that exposed it, beyond the listed ones: prefill chunks of several lengths
// on several cached contexts, on the small and the large preset, compile to a valid schedule.
TEST(Schedule, GreedySchedulesPrefillChunksOnCachedContexts) {
  for (const char* arch : {"lpu-small", "lpu-asic"}) {
    const ArchConfig a = load_arch_config(strcat(LPU_SOURCE_DIR, "/configs/", arch, ".yaml"));
    const CompileOptions co = compile_options_for(a, "greedy");
    for (const char* model : {"opt-1.3b", "llama2-7b"})
      for (int64_t tokens : {17, 100, 250})
        for (int64_t context : {300, 1900}) {
          WorkloadSpec w = resolve_workload(std::string(model) + "-decode");
          w.seq_len = tokens;
          w.context = context;
          w.layers = 1;
          Compilation c;
          ASSERT_NO_THROW(c = compile_graph(build_graph(w), co))
              << arch << " " << model << " " << tokens << " tokens on " << context;
          EXPECT_NO_THROW(verify_schedule(c.loop_ir, c.schedule));
        }
  }
}

TEST(Schedule, UnknownPolicyIsInputError) { EXPECT_THROW(compile_builtin("softmax", "magic"), InputError); }

TEST(Codegen, LocalMemoryTooSmallNamesKernelAndBytes) {
  try {
    compile_builtin("ln_gelu_add", "greedy", 4 * 1024, 64, 1024);
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel k0_"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes of local memory"), std::string::npos) << m;
  }
}

TEST(Codegen, TilesFitLocalMemory) {
  Compilation c = compile_builtin("ln_gelu_add", "greedy", 128 * 1024, 256, 1024);
  for (const auto& t : c.code.tiling) {
    EXPECT_LE(t.hoisted_bytes + 2 * t.tile_bytes, 128 * 1024) << t.kernel;
    EXPECT_GE(t.tile_rows, 1);
    EXPECT_EQ(t.tiles, (256 + t.tile_rows - 1) / t.tile_rows);
  }
}
