// Regional compilation (isa/layer_template.h, generate/regional.h): the program derived from
// the 3- and 4-layer compiles equals the whole model compiled, instruction for instruction.
#include <gtest/gtest.h>

#include "generate/regional.h"
#include "isa/layer_template.h"
#include "isa/program_fields.h"
#include "jobs/jobs.h"
#include "support/layer_tag.h"
#include "test_util.h"

using namespace lpu;

namespace {

const auto kCompile = [](const Graph& g, const CompileOptions& o) { return compile_graph(g, o); };

// Regional against whole: the same program text, the same kernel count and compulsory bytes.
void expect_regional_exact(const WorkloadSpec& w, const ArchConfig& a, const std::string& fusion) {
  SCOPED_TRACE(w.name + " " + fusion + " " + w.phase + " context " + std::to_string(w.context));
  CompileOptions co = compile_options_for(a, fusion);
  RegionalProgram r = compile_regional(w, co, kCompile);
  ASSERT_TRUE(r.regional) << r.why_not;
  Compilation whole = compile_graph(build_graph(w), co);
  EXPECT_EQ(fields::program_difference(whole.code.program, r.program), "");
  EXPECT_EQ(print_program(whole.code.program), print_program(r.program));
  EXPECT_EQ(r.kernels, whole.schedule.kernels.size());
  EXPECT_EQ(r.compulsory_hbm_bytes, whole.compulsory_hbm_bytes);
  EXPECT_GT(r.layer_instructions, 0u);
}

WorkloadSpec spec(const std::string& model, const std::vector<std::string>& sets = {}) {
  std::vector<std::string> o;
  for (const auto& s : sets) o.push_back(s);
  return resolve_workload(model, o);
}

}  // namespace

TEST(LayerTemplate, LayerOfName) {
  EXPECT_EQ(layer_of_name("l12.q_proj.weight"), 12);
  EXPECT_EQ(layer_of_name("k7_l2.q_scaled_x6"), 2);
  EXPECT_EQ(layer_of_name("lm_head.weight"), -1);
  EXPECT_EQ(layer_of_name("final_norm.weight"), -1);
  EXPECT_EQ(layer_of_name("xl3.a"), -1);  // the tag starts a name or follows a separator
  EXPECT_EQ(layer_of_name("l3"), -1);     // ... and ends with a dot
  EXPECT_EQ(layer_of_name("kv.l0.k_cache"), 0);
}

// Every built-in decoder preset of 5 or more layers, at its full depth, decode and prefill, both
// policies that compile once (lpu-asic: every one of them fits).
TEST(Regional, EveryBuiltInDecoderAtFullDepth) {
  ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-asic.yaml");
  for (const char* m :
       {"opt-1.3b", "opt-6.7b", "opt-13b", "opt-30b", "opt-66b", "llama2-7b", "llama2-13b", "llama2-70b", "gpt2"})
    for (const char* fusion : {"greedy", "none"}) {
      expect_regional_exact(spec(m, {"dtype=f16", "context=300"}), a, fusion);
      if (std::string(m) == "opt-1.3b" || std::string(m) == "llama2-7b")
        expect_regional_exact(spec(m, {"dtype=f16", "phase=prefill", "seq_len=32", "context=0"}), a, fusion);
    }
}

// Depths 5 .. 12 of small decoders of every part (GQA + rotary + SwiGLU + MoE; learned positions
// + LayerNorm + ReLU; batch 4), on a small device whose tiles are short.
TEST(Regional, EveryDepthOfSmallDecoders) {
  ArchConfig small = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  for (int64_t L = 5; L <= 12; ++L) {
    const std::string l = "layers=" + std::to_string(L);
    expect_regional_exact(spec("tiny-llama", {l, "experts=4", "experts_per_token=2", "context=40"}), small, "greedy");
    expect_regional_exact(spec("tiny-opt", {l, "batch=4", "context=17"}), small, L % 2 ? "none" : "greedy");
  }
}

// Tensor parallelism: each rank's graph (its share of the heads and FFN, its collectives).
TEST(Regional, TensorParallelRanks) {
  ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-asic.yaml");
  for (int64_t devices : {2, 4})
    for (int64_t rank = 0; rank < devices; ++rank) {
      WorkloadSpec w = spec("opt-1.3b", {"dtype=f16", "context=77"});
      w.tp = devices;
      w.tp_rank = rank;
      expect_regional_exact(w, a, "greedy");
      if (devices > 2) continue;  // tiny-llama's 2 KV heads split over 2 devices at most
      WorkloadSpec t = spec("tiny-llama", {"layers=6", "context=21"});
      t.tp = devices;
      t.tp_rank = rank;
      expect_regional_exact(t, load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml"), "none");
    }
}

TEST(Regional, ShallowModelsAndGraphFilesCompileWhole) {
  ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  CompileOptions co = compile_options_for(a, "greedy");
  RegionalProgram r = compile_regional(spec("tiny-llama"), co, kCompile);  // 2 layers
  EXPECT_FALSE(r.regional);
  EXPECT_NE(r.why_not.find("2 layers"), std::string::npos) << r.why_not;
  EXPECT_EQ(print_program(r.program), print_program(compile_graph(build_graph(spec("tiny-llama")), co).code.program));
  EXPECT_FALSE(regional_applies(spec("ln_gelu_add")));
}

// A template refuses programs that do not repeat, and says why; verify() names a difference.
TEST(LayerTemplate, RefusesWhatDoesNotRepeatAndVerifyNamesDifferences) {
  ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  CompileOptions co = compile_options_for(a, "greedy");
  auto prog = [&](int64_t L, const char* ctx = "context=40") {
    return compile_graph(build_graph(spec("tiny-opt", {"layers=" + std::to_string(L), ctx})), co).code.program;
  };
  std::string why;
  EXPECT_FALSE(LayerTemplate::make(prog(3), prog(3), co.codegen.hbm_alignment, why));
  EXPECT_NE(why, "");
  why.clear();
  EXPECT_FALSE(LayerTemplate::make(prog(3), prog(5), co.codegen.hbm_alignment, why));
  EXPECT_NE(why, "");
  auto t = LayerTemplate::make(prog(3), prog(4), co.codegen.hbm_alignment, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->verify(prog(7), 7), "");
  // A program of another context is not the template's: the first difference is named.
  std::string d = t->verify(prog(7, "context=41"), 7);
  EXPECT_NE(d, "");
  EXPECT_NE(d.find("compiled"), std::string::npos) << d;
}
