// `lpu generate` in process (workbench/generate/generate.h): the step sequence, the percentiles, the
// compile cache (exact hits, counted), the checks on the lengths, and each step against the
// same step run on its own (run_job). The CLI side is tests/generate_test.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>

#include "driver/front_end_template.h"
#include "generate/generate.h"
#include "generate/symbolic_steps.h"
#include "isa/encoding.h"
#include "isa/program_template.h"
#include "process/forked_work.h"
#include "ref/reference.h"
#include "support/error.h"
#include "test_util.h"

using namespace lpu;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

namespace {

WorkloadSpec tiny(const std::string& model = "tiny-opt", const std::vector<std::string>& sets = {}) {
  WorkloadSpec w = resolve_workload(model, sets);  // a built-in LLM by name: fp16, like the CLI
  return w;
}

GenerateOptions lengths(int64_t prompt, int64_t gen) {
  GenerateOptions o;
  o.prompt_len = prompt;
  o.gen_len = gen;
  return o;
}

// `lpu run` of generation step `st` of workload `w` (its phase, tokens and context).
RunOutcome run_step(const WorkloadSpec& w, const GenerateStep& st, const ArchConfig& a) {
  WorkloadSpec s = w;
  s.phase = st.phase;
  s.seq_len = st.seq_len;
  s.context = st.context;
  return run_job(s, a, "greedy", false);
}

// Every step through the exact cache (no symbolic decode programs): what the cache tests count.
GenerateOptions plain(int64_t prompt, int64_t gen) {
  GenerateOptions o = lengths(prompt, gen);
  o.symbolic = false;
  return o;
}

std::string error_of(const WorkloadSpec& w, const ArchConfig& a, const GenerateOptions& o) {
  CompileCache c;
  try {
    run_generate(w, a, o, c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Generate, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  LatencySummary s = summarize_latencies(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  LatencySummary one = summarize_latencies({7});
  EXPECT_DOUBLE_EQ(one.p50, 7);
  EXPECT_DOUBLE_EQ(one.p99, 7);
  EXPECT_EQ(summarize_latencies({}).count, 0u);
}

TEST(Generate, StepsPositionsAndTotals) {
  CompileCache cache;
  GenerateResult r = run_generate(tiny(), testutil::small_arch(), plain(6, 4), cache);
  ASSERT_EQ(r.steps.size(), 4u);
  uint64_t bytes = 0;
  double lat = 0;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const GenerateStep& s = r.steps[i];
    EXPECT_EQ(s.step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(s.position, 6 + static_cast<int64_t>(i));
    EXPECT_EQ(s.phase, i == 0 ? "prefill" : "decode");
    EXPECT_EQ(s.seq_len, i == 0 ? 6 : 1);
    EXPECT_EQ(s.context, i == 0 ? 0 : 6 + static_cast<int64_t>(i) - 1);
    EXPECT_GT(s.cycles, 0u);
    bytes += s.hbm_read_bytes + s.hbm_write_bytes;
    lat += s.latency_s;
  }
  EXPECT_EQ(r.hbm_bytes(), bytes);
  EXPECT_DOUBLE_EQ(r.total_latency_s(), lat);
  EXPECT_DOUBLE_EQ(r.ttft_s(), r.steps[0].latency_s);
  EXPECT_EQ(r.per_token().count, 3u);
  EXPECT_EQ(r.compiles, 4u);
  EXPECT_EQ(r.cache_hits, 0u);
}

// Each step is exactly `lpu run` of that step's workload: same cycles, same bytes.
TEST(Generate, StepsEqualRunJob) {
  ArchConfig a = testutil::small_arch();
  CompileCache cache;
  GenerateResult r = run_generate(tiny("tiny-llama"), a, lengths(5, 3), cache);
  for (const GenerateStep& s : r.steps) {
    RunOutcome o = run_step(tiny("tiny-llama"), s, a);
    EXPECT_EQ(s.cycles, o.sim.stats.cycles) << "step " << s.step;
    EXPECT_EQ(s.hbm_read_bytes, o.sim.stats.hbm_read_bytes) << "step " << s.step;
    EXPECT_EQ(s.hbm_write_bytes, o.sim.stats.hbm_write_bytes) << "step " << s.step;
  }
}

// Batch 4: each step runs the four sequences together and is `lpu run` of that batched step;
// tokens and tokens/s count every sequence.
TEST(Generate, BatchedStepsEqualRunJobAndCountEverySequence) {
  ArchConfig a = testutil::small_arch();
  CompileCache cache;
  WorkloadSpec b = tiny("tiny-llama", {"batch=4"});
  GenerateResult r = run_generate(b, a, lengths(3, 4), cache);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.tokens(), 16);
  for (const GenerateStep& s : r.steps) {
    RunOutcome o = run_step(b, s, a);
    EXPECT_EQ(s.cycles, o.sim.stats.cycles) << "step " << s.step;
    EXPECT_EQ(s.hbm_read_bytes, o.sim.stats.hbm_read_bytes) << "step " << s.step;
  }
  nlohmann::json j = r.to_json();
  EXPECT_EQ(j["batch"], 4);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 4 * j["tokens_per_s_per_sequence"].get<double>());
  EXPECT_THAT(r.summary(), HasSubstr("4 sequences x"));
}

// Two devices (tensor parallelism): every step, symbolic and regional, is `lpu run` of that step
// with devices = 2, and every device's program equals a plain compile of its rank.
TEST(Generate, TensorParallelStepsEqualRunJob) {
  ArchConfig a = testutil::small_arch();
  a.devices = 2;
  CompileCache cache;
  WorkloadSpec w6 = tiny("tiny-llama", {"layers=6"});
  GenerateOptions o = lengths(3, 14);
  size_t checked = 0;
  o.on_step = [&](const GenerateStep& st, const Program& p) {
    RunOutcome run = run_step(w6, st, a);
    EXPECT_EQ(st.cycles, run.sim.stats.cycles) << "step " << st.step;
    // The generation simulates device 0 alone for ranks that rotate it: the same figures as
    // simulating both devices.
    SimOptions every;
    every.mirror_symmetric_devices = false;
    for (const auto& rc : run.rank_comps) every.other_devices.push_back(&rc.code.program);
    SimResult whole = simulate(run.comp.code.program, run.arch, every);
    EXPECT_EQ(st.cycles, whole.stats.cycles) << "step " << st.step;
    EXPECT_EQ(st.energy_j, whole.stats.energy.total_j()) << "step " << st.step;
    EXPECT_EQ(st.hbm_read_bytes, run.sim.stats.hbm_read_bytes) << "step " << st.step;
    EXPECT_EQ(print_program(p), print_program(run.comp.code.program)) << "step " << st.step;
    ++checked;
  };
  GenerateResult r = run_generate(w6, a, o, cache);
  EXPECT_EQ(checked, 14u);
  EXPECT_EQ(r.devices, 2);
  EXPECT_GT(r.instantiated, 0u);
  EXPECT_GT(r.regional_compiles, 0u);
  EXPECT_EQ(r.to_json()["devices_used"], 2);
  // A graph file does not split across devices: exit 2 naming it.
  WorkloadSpec g =
      resolve_workload(std::string(LPU_SOURCE_DIR) + "/tests/fixtures/hf/hf_llama_decode_eager_ids_tiny.json");
  EXPECT_THROW(run_generate(g, a, lengths(2, 2), cache), InputError);
}

// The same generation twice through one cache: the second compiles nothing and is identical.
TEST(Generate, CacheHitsAreExactAndCounted) {
  ArchConfig a = testutil::small_arch();
  CompileCache cache;
  GenerateResult first = run_generate(tiny(), a, plain(4, 3), cache);
  GenerateResult second = run_generate(tiny(), a, plain(4, 3), cache);
  EXPECT_EQ(second.compiles, 0u);
  EXPECT_EQ(second.cache_hits, 3u);
  EXPECT_EQ(cache.hits(), 3u);
  EXPECT_EQ(cache.misses(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(first.steps[i].cached);
    EXPECT_TRUE(second.steps[i].cached);
    EXPECT_EQ(first.steps[i].cycles, second.steps[i].cycles);
    EXPECT_EQ(first.steps[i].hbm_read_bytes, second.steps[i].hbm_read_bytes);
  }
  // One more token: the three shapes seen hit, the new context compiles.
  GenerateResult longer = run_generate(tiny(), a, plain(4, 4), cache);
  EXPECT_EQ(longer.cache_hits, 3u);
  EXPECT_EQ(longer.compiles, 1u);
  // Another fusion policy is another key.
  GenerateOptions none = plain(4, 3);
  none.fusion = "none";
  GenerateResult unfused = run_generate(tiny(), a, none, cache);
  EXPECT_EQ(unfused.compiles, 3u);
  EXPECT_EQ(unfused.cache_hits, 0u);
}

TEST(Generate, BoundedCacheKeepsTheFirstPrograms) {
  ArchConfig a = testutil::small_arch();
  CompileCache cache(1);
  run_generate(tiny(), a, plain(4, 3), cache);
  EXPECT_EQ(cache.size(), 1u);
  GenerateResult again = run_generate(tiny(), a, plain(4, 3), cache);
  EXPECT_EQ(again.cache_hits, 1u);
  EXPECT_TRUE(again.steps[0].cached);
  EXPECT_EQ(again.compiles, 2u);
}

// The memoised cost model changes no decision: over a range of contexts, with one memo shared
// by all of them (as a generation shares it), the program is the one compile_graph makes.
void expect_memo_exact(const std::string& model, const std::vector<int64_t>& contexts, size_t simulated) {
  ArchConfig a = testutil::small_arch();
  CompileOptions co = compile_options_for(a, "greedy");
  KernelCostMemo memo;
  for (size_t i = 0; i < contexts.size(); ++i) {
    WorkloadSpec w = tiny(model);
    w.context = contexts[i];
    w.phase = contexts[i] ? "decode" : "prefill";
    w.seq_len = contexts[i] ? 1 : 5;
    Graph g = build_graph(w);
    Compilation concrete = compile_graph(g, co);
    Compilation memoised = compile_with_memo(g, co, memo);
    ASSERT_EQ(print_program(concrete.code.program), print_program(memoised.code.program))
        << model << " context " << contexts[i];
    if (i < simulated) {
      EXPECT_EQ(simulate(concrete.code.program, a, {}).stats.cycles,
                simulate(memoised.code.program, a, {}).stats.cycles);
    }
  }
  EXPECT_GT(memo.hits(), 0u);
}

TEST(Generate, CostMemoIsExactOverContexts) {
  std::vector<int64_t> ctx = {0};
  for (int64_t c = 1; c <= 40; ++c) ctx.push_back(c);
  ctx.push_back(255);
  expect_memo_exact("tiny-opt", ctx, 4);
  expect_memo_exact("tiny-llama", ctx, 4);
}

TEST(Generate, CostMemoIsExactOnOpt13b) { expect_memo_exact("opt-1.3b", {32, 33, 34, 500, 2046}, 2); }

// The memo holds what one compile uses, not every context's attention kernels.
TEST(Generate, CostMemoStaysBounded) {
  ArchConfig a = testutil::small_arch();
  CompileCache short_run, long_run;
  run_generate(tiny(), a, lengths(4, 6), short_run);
  run_generate(tiny(), a, lengths(4, 40), long_run);
  EXPECT_GT(long_run.cost_memo.hits(), 0u);
  EXPECT_LE(long_run.cost_memo.size(), short_run.cost_memo.size() * 5 / 4);
}

TEST(Generate, BadLengths) {
  ArchConfig a = testutil::small_arch();
  EXPECT_THAT(error_of(tiny(), a, lengths(4, 0)), HasSubstr("gen_len: --gen-len 0 out of range"));
  EXPECT_THAT(error_of(tiny(), a, lengths(4, -3)), HasSubstr("gen_len: --gen-len -3 out of range"));
  EXPECT_THAT(error_of(tiny(), a, lengths(0, 3)), HasSubstr("prompt_len: --prompt-len 0 out of range"));
  // tiny-opt's max_position is 256: 250 + 7 = 257 tokens.
  EXPECT_THAT(
      error_of(tiny(), a, lengths(250, 7)),
      HasSubstr("gen_len (--gen-len): prompt_len 250 + gen_len 7 = 257 tokens is beyond tiny-opt's max_position 256"));
  EXPECT_EQ(error_of(tiny(), a, lengths(250, 6)), "");
  EXPECT_THAT(error_of(tiny(), a, lengths(256, 1)), HasSubstr("prompt_len (--prompt-len)"));
  WorkloadSpec micro = resolve_workload("ln_gelu_add");
  EXPECT_THAT(error_of(micro, a, lengths(4, 2)), HasSubstr("is not a built-in LLM"));
}

TEST(Generate, KvCacheBeyondHbmSaysBytesAndDevices) {
  // OPT-1.3B's weights (2.63 GB) fit 2.6 GiB; with 2048 tokens of KV cache they do not.
  ArchConfig a = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml", {"hbm.capacity_gib=2.6"});
  std::string e = error_of(resolve_workload("opt-1.3b"), a, lengths(32, 2016));
  EXPECT_THAT(e, HasSubstr("gen_len: prompt_len 32 + gen_len 2016: the last decode step (context 2046) needs"));
  EXPECT_THAT(e, HasSubstr("KV cache 402259968 bytes"));
  EXPECT_THAT(e, HasSubstr("hbm.capacity_gib = 2.6 GiB"));
  EXPECT_THAT(e, HasSubstr("it would need 2 devices"));
}

}  // namespace

// ---- symbolic decode programs (isa/program_template.h) --------------------------------------

// Every decode step's program, symbolic or not, equals a plain compile of that step at its
// context: the same program text, hence the same cycles. The contexts cross tile boundaries
// (guard failures > 0: the tiling or the instruction stream changed and was recompiled).
void expect_symbolic_exact(const std::string& model, const std::string& fusion, const ArchConfig& a, int64_t prompt,
                           int64_t gen, size_t min_failures, const std::vector<std::string>& sets = {}) {
  CompileCache cache;
  GenerateOptions o = lengths(prompt, gen);
  o.fusion = fusion;
  CompileOptions co = compile_options_for(a, fusion);
  size_t checked = 0, instantiated = 0;
  o.on_step = [&](const GenerateStep& st, const Program& p) {
    if (st.step < 2) return;
    WorkloadSpec w = tiny(model, sets);
    w.phase = "decode";
    w.seq_len = 1;
    w.context = st.context;
    Program plain = compile_graph(build_graph(w), co).code.program;
    ASSERT_EQ(print_program(plain), print_program(p)) << model << " " << fusion << " context " << st.context;
    ++checked;
    instantiated += st.instantiated;
  };
  GenerateResult r = run_generate(tiny(model, sets), a, o, cache);
  EXPECT_EQ(checked, static_cast<size_t>(gen - 1));
  // Regional compilation where the model is deep enough (regional.h), whole otherwise.
  EXPECT_TRUE(r.regional);
  EXPECT_EQ(r.regional_compiles > 0, decoder_depth(tiny(model, sets)) >= 5) << r.regional_compiles;
  EXPECT_TRUE(r.symbolic);
  EXPECT_EQ(r.instantiated, instantiated);
  EXPECT_GT(r.instantiated, 0u) << model << " " << fusion;
  EXPECT_GE(r.guard_failures, min_failures) << model << " " << fusion;
  EXPECT_GE(r.templates, 1u);
  // Most compiles of a long run take their front half from a template (front_end_steps.h).
  if (gen >= 100) {
    EXPECT_GT(r.front_ends_instantiated, r.front_ends_compiled) << model << " " << fusion;
  }
  // The same cycles as compiling every step.
  CompileCache plain_cache;
  GenerateOptions po = lengths(prompt, gen);
  po.fusion = fusion;
  po.symbolic = false;
  po.regional = false;
  GenerateResult q = run_generate(tiny(model, sets), a, po, plain_cache);
  ASSERT_EQ(q.steps.size(), r.steps.size());
  for (size_t i = 0; i < q.steps.size(); ++i) {
    EXPECT_EQ(q.steps[i].cycles, r.steps[i].cycles) << model << " step " << i + 1;
    EXPECT_EQ(q.steps[i].hbm_read_bytes, r.steps[i].hbm_read_bytes);
  }
  EXPECT_EQ(q.instantiated, 0u);
}

// A small local memory makes the attention kernels' tiles cross boundaries as the context grows.
ArchConfig small_lmu(int kib) {
  ArchConfig a = testutil::small_arch();
  a.lmu.capacity_kib = kib;
  return a;
}

TEST(GenerateSymbolic, EqualsPlainCompileMhaGreedy) {
  expect_symbolic_exact("tiny-opt", "greedy", small_lmu(8), 1, 200, 1);
}
TEST(GenerateSymbolic, EqualsPlainCompileMhaNone) {
  expect_symbolic_exact("tiny-opt", "none", small_lmu(8), 1, 200, 1);
}
TEST(GenerateSymbolic, EqualsPlainCompileGqaGreedy) {
  expect_symbolic_exact("tiny-llama", "greedy", small_lmu(8), 1, 200, 1);
}
TEST(GenerateSymbolic, EqualsPlainCompileGqaNone) {
  expect_symbolic_exact("tiny-llama", "none", small_lmu(8), 1, 200, 1);
}
TEST(GenerateSymbolic, EqualsPlainCompileDefaultArch) {
  expect_symbolic_exact("tiny-opt", "greedy", testutil::small_arch(), 3, 120, 0);
  expect_symbolic_exact("tiny-llama", "greedy", testutil::small_arch(), 3, 120, 0);
}

// Six layers: every compile is regional (the middle layers instantiated from the 3- and
// 4-layer programs), and every step still equals a plain whole-model compile.
TEST(GenerateSymbolic, EqualsPlainCompileRegional) {
  expect_symbolic_exact("tiny-llama", "greedy", small_lmu(8), 1, 60, 1, {"layers=6"});
  expect_symbolic_exact("tiny-opt", "none", testutil::small_arch(), 3, 25, 0, {"layers=5"});
}

// A second generation through the same cache instantiates every decode step the first one
// covered: no compile at all (the prefill comes from the exact cache).
TEST(GenerateSymbolic, CacheServesASecondGeneration) {
  CompileCache cache;
  GenerateResult a = run_generate(tiny(), testutil::small_arch(), lengths(4, 60), cache);
  EXPECT_GT(a.compiles, 0u);
  GenerateResult b = run_generate(tiny(), testutil::small_arch(), lengths(4, 60), cache);
  EXPECT_LT(b.compiles, a.compiles);
  EXPECT_GT(b.instantiated, a.instantiated);
  EXPECT_EQ(b.cache_hits, b.instantiated + 1);  // the prefill from the exact cache
  // Every context a template's guard covered in the first run is instantiated in the second.
  size_t covered = 0;
  for (const auto& t : cache.symbolic)
    for (int64_t c = 4; c <= 62; ++c) covered += t.program.holds(c);
  EXPECT_EQ(b.instantiated, covered);
  for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].cycles, b.steps[i].cycles);
  // Another fusion policy is another key: its programs are compiled anew.
  GenerateOptions o = lengths(4, 60);
  o.fusion = "none";
  GenerateResult c = run_generate(tiny(), testutil::small_arch(), o, cache);
  EXPECT_GT(c.compiles, 0u);
}

// --explain-recompiles: each guard failure says which guard and what changed.
TEST(GenerateSymbolic, ExplainsGuardFailures) {
  CompileCache cache;
  std::ostringstream log;
  GenerateOptions o = lengths(1, 200);
  o.explain = &log;
  GenerateResult r = run_generate(tiny(), small_lmu(8), o, cache);
  ASSERT_GT(r.guard_failures, 0u);
  EXPECT_THAT(log.str(), HasSubstr("[recompiles] step "));
  EXPECT_THAT(log.str(), HasSubstr("guard failed: context "));
  EXPECT_THAT(log.str(), HasSubstr("outside ["));
  EXPECT_THAT(log.str(), HasSubstr("; recompiling"));
  nlohmann::json j = r.to_json();
  EXPECT_EQ(j["compile_cache"]["guard_failures"], r.guard_failures);
  EXPECT_EQ(j["compile_cache"]["instantiated"], r.instantiated);
  EXPECT_THAT(r.to_csv(), ContainsRegex(",instantiated(,[^,\n]*)?\n"));
}

// The HBM alignment the programs below are compiled with (a whole interleave round of lpu-small).
int64_t small_alignment() { return compile_options_for(testutil::small_arch(), "greedy").codegen.hbm_alignment; }

Program tiny_decode_program(int64_t context, const std::string& model = "tiny-opt") {
  WorkloadSpec w = tiny(model);
  w.phase = "decode";
  w.seq_len = 1;
  w.context = context;
  return compile_graph(build_graph(w), compile_options_for(testutil::small_arch(), "greedy")).code.program;
}

// The template: instantiation between its probes, guard extension by verification, and the
// refusals with their reasons. On OPT-1.3B (lpu-small), contexts 100..116 share a structure:
// only the KV-cache sizes, loop bounds and the addresses after the caches move.
TEST(GenerateSymbolic, TemplateGuardsAndRefusals) {
  std::string why;
  auto t = ProgramTemplate::make(tiny_decode_program(100, "opt-1.3b"), 100, tiny_decode_program(101, "opt-1.3b"), 101,
                                 small_alignment(), why);
  ASSERT_TRUE(t) << why;
  EXPECT_TRUE(t->holds(100));
  EXPECT_TRUE(t->holds(101));
  EXPECT_FALSE(t->holds(102));
  EXPECT_GT(t->symbolic_fields(), 0u);
  ASSERT_TRUE(t->verify(tiny_decode_program(116, "opt-1.3b"), 116, why)) << why;
  EXPECT_EQ(t->hi(), 116);
  for (int64_t c : {105, 110})
    EXPECT_EQ(print_program(t->instantiate(c)), print_program(tiny_decode_program(c, "opt-1.3b")));
  // A program of another structure is refused, naming what differs.
  EXPECT_FALSE(ProgramTemplate::make(tiny_decode_program(20), 20, tiny_decode_program(21, "tiny-llama"), 21,
                                     small_alignment(), why));
  EXPECT_FALSE(why.empty());
  // Past a tile boundary the guard does not extend, and says why (the tiny model's LMU layout
  // moves every few contexts).
  auto u = ProgramTemplate::make(tiny_decode_program(3), 3, tiny_decode_program(4), 4, small_alignment(), why);
  ASSERT_TRUE(u) << why;
  EXPECT_FALSE(u->verify(tiny_decode_program(6), 6, why));
  EXPECT_THAT(why, HasSubstr("lm_addr compiled"));
  EXPECT_EQ(u->hi(), 4);
  // A field changed by hand: verify names the instruction and the field.
  Program bad = tiny_decode_program(120, "opt-1.3b");
  for (auto& in : bad.code)
    if (in.opcode == Opcode::VxeOp) {
      in.rows += 1;
      break;
    }
  EXPECT_FALSE(t->verify(bad, 120, why));
  EXPECT_THAT(why, HasSubstr("rows compiled"));
  EXPECT_EQ(t->hi(), 116);  // a failed verification does not extend the guard
  EXPECT_TRUE(t->verify(tiny_decode_program(117, "opt-1.3b"), 117, why)) << why;
  EXPECT_EQ(t->hi(), 117);
}

// The front half of OPT-1.3B's decode step (4 layers, lpu-small) as a template of the context:
// between 400 and 480 the attention kernels' rows per tile and register layout change several
// times (no program template spans it), the front end does not. Every instantiation is the
// front end compiled there, and the back end run on it (with the fixed kernels' tilings from
// another context) gives the program a whole compile gives.
TEST(GenerateSymbolic, FrontEndTemplateGivesTheCompiledProgram) {
  WorkloadSpec w = tiny("opt-1.3b");
  w.phase = "decode";
  w.seq_len = 1;
  w.layers = 4;
  const CompileOptions co = compile_options_for(testutil::small_arch(), "greedy");
  auto front = [&](int64_t c) {
    w.context = c;
    return compile_front_end(build_graph(w), co);
  };
  std::string why;
  auto t = FrontEndTemplate::make(front(400), 400, front(401), 401, why);
  ASSERT_TRUE(t) << why;
  ASSERT_TRUE(t->verify(front(480), 480, why)) << why;
  EXPECT_EQ(t->hi(), 480);
  const std::vector<bool>& fixed = t->fixed_kernels();
  ASSERT_FALSE(fixed.empty());
  EXPECT_TRUE(std::count(fixed.begin(), fixed.end(), true) > 0);   // the projections and MLPs
  EXPECT_TRUE(std::count(fixed.begin(), fixed.end(), false) > 0);  // attention
  KernelCodeReuse reuse;  // the fixed kernels' code, recorded at 401 and copied after
  reuse.reusable = fixed;
  Compilation first = compile_back_end(t->instantiate(401), nullptr, &reuse);
  for (size_t k = 0; k < fixed.size(); ++k) EXPECT_EQ(k < reuse.kernels.size() && reuse.kernels[k], fixed[k]) << k;
  std::vector<std::optional<KernelTiling>> known;
  for (size_t k = 0; k < fixed.size(); ++k) known.push_back(fixed[k] ? first.schedule.kernels[k].tiling : std::nullopt);
  std::set<std::string> programs;
  for (int64_t c : {420, 433, 455, 470}) {
    FrontEnd f = t->instantiate(c);
    EXPECT_EQ(print_loop_ir(f.loop_ir), print_loop_ir(front(c).loop_ir)) << c;
    w.context = c;
    const std::string whole = print_program(compile_graph(build_graph(w), co).code.program);
    EXPECT_EQ(print_program(compile_back_end(std::move(f), &known, &reuse).code.program), whole) << c;
    programs.insert(whole.substr(whole.find("\n")));
  }
  EXPECT_EQ(programs.size(), 4u);
  // Refusals name what differs: another model's front end; a kernel whose rows are not affine.
  EXPECT_FALSE(FrontEndTemplate::make(
      front(20), 20,
      [&] {
        WorkloadSpec l = tiny("tiny-llama");
        l.phase = "decode";
        l.seq_len = 1;
        l.context = 21;
        return compile_front_end(build_graph(l), co);
      }(),
      21, why));
  EXPECT_FALSE(why.empty());
  FrontEnd odd = front(402);
  odd.schedule.kernels[0].rows += 1;
  EXPECT_FALSE(FrontEndTemplate::make(front(400), 400, odd, 402, why));
  EXPECT_THAT(why, HasSubstr("is not affine"));
  EXPECT_FALSE(t->verify(odd, 402, why));
  EXPECT_THAT(why, HasSubstr("rows compiled"));
  EXPECT_EQ(t->hi(), 480);
}

// reparse_loop_ir: the lines marked parsed again, the rest taken from the base; where another
// line changed, a whole parse (which names the line of a mistake).
TEST(GenerateSymbolic, ReparseTakesUnchangedLinesFromTheBase) {
  WorkloadSpec w = tiny();
  w.phase = "decode";
  w.seq_len = 1;
  w.context = 9;
  const CompileOptions co = compile_options_for(testutil::small_arch(), "greedy");
  const LoopProgram base = compile_front_end(build_graph(w), co).loop_ir;
  w.context = 10;
  const std::string text = print_loop_ir(compile_front_end(build_graph(w), co).loop_ir);
  std::vector<bool> changed;
  {
    const std::string b = print_loop_ir(base);
    size_t i = 0, j = 0;
    while (i <= text.size() && j <= b.size()) {
      size_t ni = text.find('\n', i), nj = b.find('\n', j);
      if (ni == std::string::npos || nj == std::string::npos) break;
      changed.push_back(text.substr(i, ni - i) != b.substr(j, nj - j));
      i = ni + 1, j = nj + 1;
    }
  }
  ASSERT_GT(std::count(changed.begin(), changed.end(), true), 0);
  EXPECT_EQ(print_loop_ir(reparse_loop_ir(base, text, changed)), text);
  // A line outside the buffers and nodes marked (the name): the whole text is parsed.
  std::string renamed = text;
  renamed.replace(0, renamed.find('\n'), "loop_ir renamed");
  std::vector<bool> name_too = changed;
  name_too[0] = true;
  EXPECT_EQ(reparse_loop_ir(base, renamed, name_too).name, "renamed");
  EXPECT_THROW(reparse_loop_ir(base, "loop_ir x\nbuffers:\n  a: f16[-1] input\n", {true, true, true}), InputError);
  EXPECT_THROW(reparse_loop_ir(base, "", {}), InputError);  // nothing to patch: parsed, and refused
}

// Contexts of a decode step compiled by SymbolicSteps as a generation walks them: on the tiny
// model a guard spans a few contexts, so guards fail, probes fail and templates are remade
// often; no context is compiled twice (a failed probe at x + 1 is the next template's second
// program), and every step's program is the one compiled at its context.
TEST(GenerateSymbolic, NoContextIsCompiledTwice) {
  CompileCache cache;
  SymbolicSteps sym(cache, small_alignment(), SymbolicSteps::Make::Eager, nullptr);
  std::map<int64_t, int> compiled;
  for (int64_t x = 3; x <= 40; ++x) {
    bool inst = false;
    auto e = sym.program(
        "tiny-opt decode", x, 48, strcat("context ", x),
        [&](int64_t c) {
          ++compiled[c];
          auto step = std::make_shared<CompiledStep>();
          step->program = tiny_decode_program(c);
          return std::shared_ptr<const CompiledStep>(step);
        },
        inst);
    EXPECT_EQ(print_program(e->program), print_program(tiny_decode_program(x))) << x;
  }
  EXPECT_GT(sym.counters().guard_failures, 2u);  // the case this is about
  for (const auto& [c, n] : compiled) EXPECT_EQ(n, 1) << "context " << c;
}

// A template sent to another process (a generation's forked simulations): encoded and decoded
// it instantiates the same programs, in place from any earlier instantiation, in any order of
// contexts; bytes that are cut short or name an instruction outside the base are refused.
TEST(GenerateSymbolic, TemplateTravelsAsBytesAndInstantiatesInPlace) {
  std::string why;
  auto t = ProgramTemplate::make(tiny_decode_program(100, "opt-1.3b"), 100, tiny_decode_program(101, "opt-1.3b"), 101,
                                 small_alignment(), why);
  ASSERT_TRUE(t) << why;
  const std::string bytes = t->encode();
  ProgramTemplate back = ProgramTemplate::decode(bytes);
  EXPECT_EQ(back.lo(), t->lo());
  EXPECT_EQ(back.hi(), t->hi());
  EXPECT_EQ(back.symbolic_fields(), t->symbolic_fields());
  EXPECT_TRUE(back.same_symbolic_part(*t));
  Program p = back.base();
  for (int64_t c : {101, 116, 100, 108, 5000}) {
    back.instantiate_into(p, c);
    EXPECT_EQ(encode_program(p), encode_program(t->instantiate(c))) << c;  // every field, byte for byte
  }
  for (size_t n : {size_t{0}, size_t{3}, size_t{20}, size_t{52}, size_t{60}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(ProgramTemplate::decode(bytes.substr(0, n)), InputError) << n;
  std::string far = bytes;  // the first record's instruction (or buffer) index: 52 bytes in
  for (int i = 0; i < 4; ++i) far[52 + i] = static_cast<char>(0xFF);
  try {
    ProgramTemplate::decode(far);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("program template: "));
  }
  Program other = tiny_decode_program(20);
  EXPECT_THROW(t->instantiate_into(other, 102), InternalError);
}

// Functional simulation of an instantiated program computes what the compiled one does. On
// the tiny model a guard spans two contexts (its LMU layout moves every few), so the program
// at 10 is computed from the one at 9 and the slopes.
TEST(GenerateSymbolic, InstantiatedProgramIsFunctionallyExact) {
  std::string why;
  Program p9 = tiny_decode_program(9);
  auto t = ProgramTemplate::make(p9, 9, tiny_decode_program(10), 10, small_alignment(), why);
  ASSERT_TRUE(t) << why;
  WorkloadSpec w = tiny();
  w.phase = "decode";
  w.seq_len = 1;
  w.context = 10;
  Compilation c = compile_graph(build_graph(w), compile_options_for(testutil::small_arch(), "greedy"));
  TensorMap in = make_random_inputs(c.core, 5);
  SimOptions so;
  so.functional = true;
  Program inst = t->instantiate(10);
  EXPECT_NE(print_program(inst), print_program(p9));
  SimResult a = simulate(inst, testutil::small_arch(), so, &in);
  SimResult b = simulate(c.code.program, testutil::small_arch(), so, &in);
  ASSERT_FALSE(b.outputs.empty());
  for (const auto& [name, v] : b.outputs) EXPECT_EQ(a.outputs.at(name).data, v.data) << name;
  EXPECT_EQ(a.stats.cycles, b.stats.cycles);
}

// ---- simulations in forked workers (process/forked_work.h, GenerateOptions::jobs) ----------

// Every request answered once, by id, through workers that hold at most `depth` at a time.
TEST(ForkedWorkers, AnswersEveryRequestById) {
  ForkedWorkers w(
      3, [](const std::string& req) { return std::string(req.rbegin(), req.rend()); }, 2);
  ASSERT_EQ(w.workers(), 3);
  std::map<uint64_t, std::string> got;
  for (uint64_t id = 0; id < 50; ++id) {
    const std::string req = strcat("request ", id, std::string(id * 1000, 'x'));  // up to 50 KB
    w.send(id, req.data(), req.size());
    EXPECT_LE(w.outstanding(), 6u);
    while (auto r = w.next(false)) got[r->id] = r->bytes;
  }
  while (auto r = w.next(true)) got[r->id] = r->bytes;
  w.finish();
  ASSERT_EQ(got.size(), 50u);
  for (const auto& [id, bytes] : got) {
    const std::string req = strcat("request ", id, std::string(id * 1000, 'x'));
    EXPECT_EQ(bytes, std::string(req.rbegin(), req.rend())) << id;
  }
}

// pick() names the worker send() would use; send_to() reaches that one: a worker keeps what it
// was sent before (here, a count of its requests), which is how a generation's workers hold a
// template between steps.
TEST(ForkedWorkers, SendToReachesTheWorkerPicked) {
  int served = 0;  // in each worker's own copy of this process
  ForkedWorkers w(
      2, [&](const std::string& req) { return strcat(req, " #", ++served); }, 1);
  ASSERT_EQ(w.workers(), 2);
  std::map<uint64_t, std::string> got;
  for (uint64_t id = 0; id < 6; ++id) {
    const int k = w.pick();
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 2);
    const std::string req = strcat("to ", k);
    w.send_to(k, id, req.data(), req.size());
    while (auto r = w.next(false)) got[r->id] = r->bytes;
  }
  while (auto r = w.next(true)) got[r->id] = r->bytes;
  w.finish();
  ASSERT_EQ(got.size(), 6u);
  std::map<std::string, int> last;  // per worker, its requests are numbered 1, 2, 3 in order
  for (const auto& [id, bytes] : got) {
    const std::string worker = bytes.substr(0, bytes.find(" #"));
    const int n = std::stoi(bytes.substr(bytes.find(" #") + 2));
    EXPECT_EQ(n, last[worker] + 1) << bytes;
    last[worker] = n;
  }
  EXPECT_EQ(last["to 0"] + last["to 1"], 6);
}

// A request that throws comes back as an error of the same type and message; the worker goes on.
TEST(ForkedWorkers, ErrorsKeepTheirTypeAndMessage) {
  ForkedWorkers w(2, [](const std::string& req) -> std::string {
    if (req == "input") throw InputError("bad input here");
    if (req == "stuck") throw SimulationStuck("did not finish");
    if (req == "other") throw std::runtime_error("something else");
    return "fine";
  });
  const std::vector<std::string> reqs = {"input", "stuck", "other", "ok"};
  for (uint64_t id = 0; id < reqs.size(); ++id) w.send(id, reqs[id].data(), reqs[id].size());
  std::map<uint64_t, ForkedWorkers::Result> got;
  while (auto r = w.next(true)) got[r->id] = *r;
  w.finish();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_THROW(
      try { got[0].rethrow(); } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "bad input here");
        throw;
      },
      InputError);
  EXPECT_THROW(got[1].rethrow(), SimulationStuck);
  EXPECT_THROW(
      try { got[2].rethrow(); } catch (const InternalError& e) {
        EXPECT_THAT(e.what(), HasSubstr("something else"));
        throw;
      },
      InternalError);
  EXPECT_TRUE(got[3].ok());
  EXPECT_EQ(got[3].bytes, "fine");
}

// A worker that dies with a request in hand is reported, not waited for forever.
TEST(ForkedWorkers, ADeadWorkerIsAnError) {
  ForkedWorkers w(1, [](const std::string&) -> std::string { ::_exit(3); });
  w.send(7, "x", 1);
  try {
    while (w.next(true)) {
    }
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("ended with 1 request(s) in hand"));
  }
}

// A request sent to a worker that has died is an error, not a SIGPIPE that kills this process.
TEST(ForkedWorkers, SendingToADeadWorkerIsAnError) {
  ForkedWorkers w(
      1, [](const std::string&) -> std::string { ::_exit(3); }, 2);
  w.send(1, "x", 1);
  ::usleep(300 * 1000);  // the worker has read the request and exited
  try {
    const std::string big(1 << 20, 'y');  // more than the pipe holds: the write must meet the closed end
    w.send(2, big.data(), big.size());
    while (w.next(true)) {
    }
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("forked worker"));
  }
}

// The same generation with its steps simulated in 3 forked workers: every figure of every step
// the same, the steps handed to on_step in order.
TEST(Generate, ForkedSimulationsGiveTheSameFigures) {
  for (bool symbolic : {true, false}) {
    GenerateOptions o = lengths(6, 40);
    o.symbolic = symbolic;
    CompileCache c1, c3;
    GenerateResult a = run_generate(tiny(), testutil::small_arch(), o, c1);
    o.jobs = 3;
    std::vector<int64_t> order;
    o.on_step = [&](const GenerateStep& st, const Program&) { order.push_back(st.step); };
    GenerateResult b = run_generate(tiny(), testutil::small_arch(), o, c3);
    EXPECT_EQ(a.simulation_processes, 1);
    EXPECT_EQ(b.simulation_processes, 3);
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      const GenerateStep &x = a.steps[i], &y = b.steps[i];
      EXPECT_EQ(order[i], static_cast<int64_t>(i + 1));
      EXPECT_EQ(x.cycles, y.cycles) << i;
      EXPECT_EQ(x.latency_s, y.latency_s) << i;  // bit for bit
      EXPECT_EQ(x.energy_j, y.energy_j) << i;
      EXPECT_EQ(x.hbm_read_bytes, y.hbm_read_bytes) << i;
      EXPECT_EQ(x.hbm_write_bytes, y.hbm_write_bytes) << i;
      EXPECT_EQ(x.simulation_reused, y.simulation_reused) << i;
      EXPECT_EQ(x.instantiated, y.instantiated) << i;
    }
    EXPECT_EQ(a.simulations, b.simulations);
    EXPECT_EQ(a.compiles, b.compiles);
    // Without on_step this process does not instantiate the steps it sends as templates.
    o.on_step = nullptr;
    CompileCache c3b;
    GenerateResult b2 = run_generate(tiny(), testutil::small_arch(), o, c3b);
    ASSERT_EQ(a.steps.size(), b2.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      EXPECT_EQ(a.steps[i].cycles, b2.steps[i].cycles) << i;
      EXPECT_EQ(a.steps[i].latency_s, b2.steps[i].latency_s) << i;
      EXPECT_EQ(a.steps[i].energy_j, b2.steps[i].energy_j) << i;
    }
    // Symbolic: most steps went to the workers as a template's id and context (serve_step).
    if (symbolic) {
      EXPECT_GT(b.instantiated, a.steps.size() / 2);
    }
  }
}

// A simulation that fails in a worker fails the generation as it would in this process.
TEST(Generate, ForkedSimulationErrorIsTheSame) {
  ArchConfig a = testutil::small_arch();
  a.sim.max_us = 0.5;  // the watchdog stops every step
  auto message = [&](int jobs) {
    GenerateOptions o = lengths(6, 8);
    o.jobs = jobs;
    CompileCache c;
    try {
      run_generate(tiny(), a, o, c);
    } catch (const SimulationStuck& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The forked run first: after an in-process simulation, AddressSanitizer's record of this
  // thread's stack can be left on a SystemC coroutine's (scripts/asan.sh), and a throw after it
  // leaves stale poison that later frames trip over (a false stack-use-after-scope).
  const std::string forked = message(2);
  const std::string here = message(1);
  EXPECT_THAT(here, HasSubstr("did not finish within sim.max_us"));
  EXPECT_EQ(forked, here);
}
