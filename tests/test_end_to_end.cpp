// The whole pipeline on the built-in microbenchmarks: graph -> passes -> loop IR -> schedule
// -> LPU program -> SystemC model, in functional and timing mode.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "codegen/lpu_codegen.h"
#include "codegen/tile_skew.h"
#include "codegen/tile_walk.h"
#include "driver/compile_cache.h"
#include "isa/encoding.h"
#include "isa/program.h"
#include "jobs/jobs.h"
#include "ref/reference.h"
#include "support/error.h"
#include "test_util.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
using testutil::builtin;
using testutil::small_arch;
}  // namespace

// Functional mode: simulated outputs of both schedules equal the reference executor.
// Tolerance: |sim - ref| <= 1e-4 + 1e-4 * |ref| (fp32; the VXE computes in fp32 like the
// reference, differences come only from summation order in reductions).
TEST(EndToEnd, FunctionalOutputsMatchReferenceForBothSchedules) {
  for (const std::string model : {"ln_gelu_add", "softmax", "rms_norm"})
    for (const std::string policy : {"none", "greedy"}) {
      RunOutcome o = run_job(builtin(model, 37, 200), small_arch(), policy, true);
      ASSERT_TRUE(o.check.has_value());
      EXPECT_TRUE(o.check->ok) << model << "/" << policy << ": " << o.check->worst;
      EXPECT_LT(o.check->max_abs_error, 1e-4) << model << "/" << policy;
    }
}

TEST(EndToEnd, Fp16WorkloadsConvertAtTheDma) {
  WorkloadSpec w = builtin("ln_gelu_add", 16, 128);
  w.dtype = DType::f16;
  RunOutcome o = run_job(w, small_arch(), "greedy", true);
  EXPECT_TRUE(o.check->ok) << o.check->worst;
}

// The default workload (workloads/ln_gelu_add.yaml: [128, 1024] fp32).
// Traffic: x (512 KiB) + weight/bias (4 KiB each) are read and the output (512 KiB) written
// once when fused: 1,056,768 bytes = the compulsory traffic. Unfused, each of the 15 core-op
// kernels writes its [128, 1024] (or [128, 1]) result and the next kernel reads it back, so
// reads and writes grow to ~7.9 MB and ~5.8 MB. Time: the fused kernel is bound by the VXE
// (~31 vector ops over 128K elements); unfused runs the same vector work plus every HBM round
// trip, and each small kernel drains the pipeline before the next starts.
TEST(EndToEnd, FusionMovesFewerBytesAndTakesFewerCycles) {
  WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/ln_gelu_add.yaml");
  RunOutcome none = run_job(w, small_arch(), "none", false);
  RunOutcome greedy = run_job(w, small_arch(), "greedy", false);
  uint64_t none_bytes = none.sim.stats.hbm_read_bytes + none.sim.stats.hbm_write_bytes;
  uint64_t fused_bytes = greedy.sim.stats.hbm_read_bytes + greedy.sim.stats.hbm_write_bytes;
  EXPECT_EQ(fused_bytes, static_cast<uint64_t>(greedy.comp.compulsory_hbm_bytes));
  EXPECT_EQ(fused_bytes, 1056768u);
  EXPECT_GT(none_bytes, 10 * fused_bytes);
  EXPECT_LT(greedy.sim.stats.cycles, none.sim.stats.cycles);
  EXPECT_LT(static_cast<double>(greedy.sim.stats.cycles), 0.75 * static_cast<double>(none.sim.stats.cycles));
  EXPECT_EQ(greedy.comp.schedule.kernels.size(), 1u);
  EXPECT_EQ(none.comp.schedule.kernels.size(), 15u);
}

TEST(EndToEnd, StatisticsAreBitIdenticalAcrossRuns) {
  WorkloadSpec w = builtin("ln_gelu_add", 64, 512);
  std::string a = run_job(w, small_arch(), "greedy", false).to_json().dump();
  std::string b = run_job(w, small_arch(), "greedy", false).to_json().dump();
  EXPECT_EQ(a, b);
  std::string c = run_job(w, small_arch(), "none", true).to_json().dump();
  std::string d = run_job(w, small_arch(), "none", true).to_json().dump();
  EXPECT_EQ(c, d);
}

TEST(EndToEnd, StatsJsonHasTheDocumentedKeys) {
  nlohmann::json j = run_job(builtin("softmax", 8, 64), small_arch(), "greedy", false).to_json();
  for (const char* k : {"cycles", "latency_us", "hbm_read_bytes", "hbm_write_bytes", "compulsory_hbm_bytes",
                        "hbm_bandwidth_utilization", "engines", "kernels", "arch", "workload", "traffic_ratio"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["engines"].contains("dma"));
  EXPECT_TRUE(j["engines"].contains("vxe"));
  EXPECT_DOUBLE_EQ(j["traffic_ratio"].get<double>(), 1.0);
}

// Whole transformer steps (tiny shapes, every feature of the big models): decode with a KV
// cache, prefill with a causal mask, grouped-query attention, rotary, SwiGLU, fp16.
TEST(EndToEnd, TinyTransformersMatchTheReference) {
  struct Case {
    const char* model;
    const char* phase;
    int64_t seq, ctx;
    DType dt;
  };
  for (const Case& c :
       {Case{"tiny-opt", "decode", 1, 16, DType::f32}, Case{"tiny-llama", "decode", 1, 8, DType::f32},
        Case{"tiny-llama", "prefill", 6, 0, DType::f32}, Case{"tiny-opt", "prefill", 5, 0, DType::f16}}) {
    WorkloadSpec w;
    w.name = c.model;
    w.model = c.model;
    w.phase = c.phase;
    w.seq_len = c.seq;
    w.context = c.ctx;
    w.dtype = c.dt;
    for (const std::string policy : {"none", "greedy"}) {
      RunOutcome o = run_job(w, small_arch(), policy, true);
      EXPECT_TRUE(o.check->ok) << c.model << " " << c.phase << " " << policy << ": " << o.check->worst;
    }
  }
}

// Fusion on a decode step: the greedy schedule stays close to the compulsory traffic (weights,
// KV cache and inputs read once, outputs and the cache append written once).
TEST(EndToEnd, GreedyDecodeStepIsNearCompulsoryTraffic) {
  WorkloadSpec w;
  w.name = "tiny-opt";
  w.model = "tiny-opt";
  w.context = 32;
  w.dtype = DType::f16;
  RunOutcome g = run_job(w, small_arch(), "greedy", false);
  RunOutcome n = run_job(w, small_arch(), "none", false);
  double gr = g.to_json()["traffic_ratio"].get<double>(), nr = n.to_json()["traffic_ratio"].get<double>();
  EXPECT_LE(gr, 1.05);
  EXPECT_GT(nr, gr);
  EXPECT_LT(g.sim.stats.cycles, n.sim.stats.cycles);
}

// Tile loops folded into `loop N ... endloop` (per-iteration HBM steps) run exactly like the
// unrolled program: identical statistics and outputs, a fraction of the program text.
TEST(EndToEnd, FoldedLoopsRunLikeUnrolledTiles) {
  for (const char* model : {"ln_gelu_add", "softmax", "tiny-opt"}) {
    WorkloadSpec w;
    w.name = model;
    w.model = model;
    w.seq_len = std::string(model) == "tiny-opt" ? 24 : 200;
    for (const auto& [k, v] : find_model_builder(model)->params) w.params[k] = 256;
    Graph g = build_graph(w);
    CompileOptions folded = compile_options_for(small_arch(), "greedy");
    folded.codegen.max_tile_rows = 8;
    CompileOptions unrolled = folded;
    unrolled.codegen.fold_loops = false;
    Compilation a = compile_graph(g, folded), b = compile_graph(g, unrolled);
    EXPECT_LT(a.code.program.code.size(), b.code.program.code.size()) << model;
    bool has_loop = false;
    for (const auto& in : a.code.program.code) has_loop |= in.opcode == Opcode::LoopBegin;
    EXPECT_TRUE(has_loop) << model;
    TensorMap in = make_random_inputs(a.core, 3);
    SimOptions o;
    o.functional = true;
    SimResult ra = simulate(a.code.program, small_arch(), o, &in), rb = simulate(b.code.program, small_arch(), o, &in);
    EXPECT_EQ(stats_to_json(ra.stats).dump(), stats_to_json(rb.stats).dump()) << model;
    for (const auto& [name, t] : rb.outputs) EXPECT_EQ(ra.outputs.at(name).data, t.data) << model << " " << name;
    // The text and binary forms carry the loops exactly.
    Program q = parse_program(print_program(a.code.program));
    ASSERT_EQ(q.code.size(), a.code.program.code.size());
    for (size_t i = 0; i < q.code.size(); ++i) EXPECT_TRUE(q.code[i].same_as(a.code.program.code[i]));
  }
}

// Tiles skewed into stages (codegen/tile_skew.h): a cut at each instruction off the matrix
// engine that waits on a matrix instruction of its stage (reads its result, or overwrites what
// it reads), and stage s of tile t in step t + s.
TEST(EndToEnd, SkewCutsWhereTheVectorEngineWaitsOnTheMatrixEngine) {
  Program p = parse_program(
      ".program cut\n.buffer w hbm:0x0 f16[64, 64] weight\n.buffer x hbm:0x2000 f32[1, 64] input\n.kernel 0 k\n"
      "dma.load f32 [1, 64] lm:0x0 <- hbm:0x2000 [0, 1]\n"
      "vxe.mul [1, 64] lm:0x100 <- lm:0x0 [64, 1], #2\n"
      "sxe.gemm f16 [1, 64, 64] lm:0x200 <- lm:0x100 [64, 1], hbm:0x0 [64, 1]\n"
      "vxe.mul [1, 64] lm:0x300 <- lm:0x0 [64, 1], #3\n"
      "vxe.add [1, 64] lm:0x400 <- lm:0x200 [64, 1], lm:0x300 [64, 1]\n"
      "sxe.gemm f16 [1, 64, 64] lm:0x500 <- lm:0x400 [64, 1], hbm:0x0 [64, 1]\n"
      "vxe.mul [1, 64] lm:0x400 <- lm:0x0 [64, 1], #4\n"
      "dma.store f32 [1, 64] hbm:0x2000 [0, 1] <- lm:0x500\nhalt\n");
  std::vector<Instruction> tile(p.code.begin(), p.code.end() - 1);
  // The vxe.add reads the first gemm's result (not the independent vxe.mul before it); the last
  // vxe.mul overwrites what the second gemm reads.
  EXPECT_EQ(matrix_stage_cuts(tile), (std::vector<size_t>{4, 6}));
  EXPECT_EQ(matrix_stage_cuts(tile, 1), (std::vector<size_t>{4}));
  EXPECT_TRUE(matrix_stage_cuts(std::vector<Instruction>(tile.begin(), tile.begin() + 2)).empty());  // no gemm
  auto marked = [&](size_t n) {
    std::vector<std::vector<Instruction>> tiles(n, tile);
    for (size_t t = 0; t < n; ++t)
      for (auto& in : tiles[t]) in.token = static_cast<int64_t>(t);  // marks the tile
    return tiles;
  };
  auto tiles_of = [](const std::vector<Instruction>& step) {
    std::string s;
    for (const auto& in : step) s += std::to_string(in.token);
    return s;
  };
  // Two tiles of three stages (A: 4 instructions, B: 2, C: 2): A(0) | A(1) B(0) | B(1) C(0) | C(1).
  SkewedTiles two = skew_tiles(marked(2), 2);
  ASSERT_EQ(two.steps.size(), 4u);
  EXPECT_EQ(tiles_of(two.steps[0]), "0000");
  EXPECT_EQ(tiles_of(two.steps[1]), "111100");
  EXPECT_EQ(tiles_of(two.steps[2]), "1100");
  EXPECT_EQ(tiles_of(two.steps[3]), "11");
  EXPECT_EQ(two.prologue + two.epilogue, 4u);  // no steady step
  // Three tiles, two buffers: tile 2 reuses tile 0's region, so C(0) opens the step A(2) is in.
  SkewedTiles three = skew_tiles(marked(3), 2);
  ASSERT_EQ(three.steps.size(), 5u);
  EXPECT_EQ(tiles_of(three.steps[2]),
            "00"
            "2222"
            "11");
  EXPECT_EQ(tiles_of(three.steps[3]),
            "22"
            "11");
  EXPECT_EQ(tiles_of(three.steps[4]), "22");
  EXPECT_EQ(three.prologue, 2u);
  EXPECT_EQ(three.epilogue, 2u);
  EXPECT_EQ(skew_tiles(marked(3), 1).steps.size(), 3u);  // single-buffered: the tiles as they are
}

// A decode step's attention tiles run skewed exactly like tiles in order: the same outputs, the
// reference's within tolerance, and no more cycles.
TEST(EndToEnd, SkewedTilesRunLikeTilesInOrder) {
  WorkloadSpec w = resolve_workload("tiny-llama", {"context=40"});
  Graph g = build_graph(w);
  CompileOptions skewed = compile_options_for(small_arch(), "greedy");
  skewed.codegen.max_tile_rows = 1;
  skewed.codegen.fold_loops = false;  // the same instructions, in another order
  CompileOptions plain = skewed;
  plain.codegen.skew_tiles = false;
  Compilation a = compile_graph(g, skewed), b = compile_graph(g, plain);
  ASSERT_EQ(a.code.program.code.size(), b.code.program.code.size());
  bool reordered = false;
  for (size_t i = 0; i < a.code.program.code.size(); ++i)
    reordered |= !a.code.program.code[i].same_as(b.code.program.code[i]);
  EXPECT_TRUE(reordered);
  TensorMap in = make_random_inputs(a.core, 5);
  SimOptions o;
  o.functional = true;
  SimResult ra = simulate(a.code.program, small_arch(), o, &in), rb = simulate(b.code.program, small_arch(), o, &in);
  for (const auto& [name, t] : rb.outputs) EXPECT_EQ(ra.outputs.at(name).data, t.data) << name;
  EXPECT_LE(ra.stats.cycles, rb.stats.cycles);
  RunOutcome checked = run_job(w, small_arch(), "greedy", true);
  ASSERT_TRUE(checked.check.has_value());
  EXPECT_TRUE(checked.check->ok) << checked.check->worst;
}

// Decode attention's softmax cut into row groups (codegen/tile_skew.h: interleave_row_groups):
// the V streams start after the first group, so an OPT-1.3B-shaped layer (32 heads of 64, where
// the vector engine's softmax outlasts the K and V streams) takes fewer cycles; every element is
// computed by the same operations, so the outputs are bit-identical to the uncut program's.
TEST(EndToEnd, SoftmaxRowGroupsOverlapTheVStreams) {
  WorkloadSpec w = resolve_workload(
      "tiny-opt", {"heads=32", "head_dim=64", "d_model=2048", "context=1024", "layers=1", "vocab=64", "ffn=64"});
  Graph g = build_graph(w);
  const ArchConfig asic = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-asic.yaml");
  CompileOptions cut = compile_options_for(asic, "greedy");
  CompileOptions whole = cut;
  whole.codegen.interleave_rows = false;
  Compilation a = compile_graph(g, cut), b = compile_graph(g, whole);
  auto pieces = [](const Program& p) {
    size_t n = 0;
    for (const Instruction& in : p.code)
      n += in.opcode == Opcode::VxeOp && (in.vop == ScalarOp::exp || in.post == ScalarOp::exp) && in.rows == 8;
    return n;
  };
  // Two tiles of 16 heads, two groups of 8 each, for the cached scores' exp and the new score's.
  EXPECT_EQ(pieces(a.code.program), 8u);
  EXPECT_EQ(pieces(b.code.program), 0u);
  TensorMap in = make_random_inputs(a.core, 7);
  SimOptions o;
  o.functional = true;
  SimResult ra = simulate(a.code.program, asic, o, &in), rb = simulate(b.code.program, asic, o, &in);
  ASSERT_FALSE(rb.outputs.empty());
  for (const auto& [name, t] : rb.outputs) EXPECT_EQ(ra.outputs.at(name).data, t.data) << name;
  EXPECT_LT(ra.stats.cycles, rb.stats.cycles);
}

// Chains (docs/isa.md: `vxe.OP.POST ... => rRED`; tile_walk.h, mark_chains): softmax's
// exp(x - max) and its row sum, a norm's mean of squares, a bias and its activation each take
// one VXE pass. Against the same graphs compiled without chains (vxe.chains: false), the
// outputs are bit-identical (each element goes through the same fp32 operations, and a row
// reduction accumulates the written row as vxe.rRED does), with fewer instructions and cycles.
TEST(EndToEnd, VectorChainsFuseSoftmaxNormsAndActivations) {
  for (const char* model : {"tiny-opt", "tiny-llama"})
    for (const char* phase : {"decode", "prefill"}) {
      const bool decode = std::string(phase) == "decode";
      WorkloadSpec w = resolve_workload(model, {std::string("phase=") + phase, decode ? "context=40" : "context=0"});
      if (!decode) w.seq_len = 12;
      const std::string what = std::string(model) + " " + phase;
      Graph g = build_graph(w);
      CompileOptions on = compile_options_for(small_arch(), "greedy");
      CompileOptions off = on;
      off.codegen.vector_chains = false;
      Compilation a = compile_graph(g, on), b = compile_graph(g, off);
      size_t post = 0, acc = 0, exp_sum = 0;
      for (const Instruction& in : a.code.program.code) {
        post += in.post.has_value();
        acc += in.acc.has_value();
        exp_sum += in.vop == ScalarOp::sub && in.post == ScalarOp::exp && in.acc == ReductionType::sum;
      }
      for (const Instruction& in : b.code.program.code) EXPECT_FALSE(in.post || in.acc) << what;
      EXPECT_GT(exp_sum, 0u) << what;   // softmax: sub.exp => rsum
      EXPECT_GT(acc, exp_sum) << what;  // and the norms' means
      if (std::string(model) == "tiny-opt") {
        EXPECT_GT(post, exp_sum) << what;  // add.relu
      }
      EXPECT_LT(a.code.program.code.size(), b.code.program.code.size()) << what;
      // Text and binary round trips keep the chains.
      const Program& p = a.code.program;
      Program q = parse_program(print_program(p), "chains.s");
      Program d = decode_program(encode_program(p), "chains.lpubin");
      ASSERT_EQ(q.code.size(), p.code.size());
      ASSERT_EQ(d.code.size(), p.code.size());
      for (size_t i = 0; i < p.code.size(); ++i) {
        EXPECT_TRUE(p.code[i].same_as(q.code[i])) << print_instruction(p.code[i]);
        EXPECT_TRUE(p.code[i].same_as(d.code[i])) << print_instruction(p.code[i]);
      }
      TensorMap in = make_random_inputs(a.core, 11);
      SimOptions o;
      o.functional = true;
      SimResult ra = simulate(a.code.program, small_arch(), o, &in),
                rb = simulate(b.code.program, small_arch(), o, &in);
      ASSERT_FALSE(rb.outputs.empty());
      for (const auto& [name, t] : rb.outputs) EXPECT_EQ(ra.outputs.at(name).data, t.data) << what << " " << name;
      EXPECT_LT(ra.stats.cycles, rb.stats.cycles) << what;
      ArchConfig without = small_arch();  // a VXE without chains refuses them before running
      without.vxe.chains = false;
      EXPECT_EQ(simulate(b.code.program, without, o, &in).stats.cycles, rb.stats.cycles) << what;
      try {
        simulate(a.code.program, without, o, &in);
        ADD_FAILURE() << what << ": a chain ran on a VXE without chains";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("vxe.chains: false"), std::string::npos) << e.what();
      }
      RunOutcome checked = run_job(w, small_arch(), "greedy", true);
      ASSERT_TRUE(checked.check.has_value());
      EXPECT_TRUE(checked.check->ok) << what << ": " << checked.check->worst;
    }
}

// Every path that sizes a kernel marks chains as the compile's options say: kernel_cost without
// a shared cache (its footprint analyses keep their own), and the cost memo of decode steps
// (compile_with_memo, which generate uses). With vxe.chains off, a sizing that assumed chains
// would plan tiles for values the emitter then holds in registers of their own.
TEST(EndToEnd, EverySizingPathFollowsTheChainSetting) {
  WorkloadSpec w = resolve_workload("tiny-opt", {"phase=decode", "context=40"});
  Graph g = build_graph(w);
  CompileOptions off = compile_options_for(small_arch(), "greedy");
  off.codegen.vector_chains = false;
  Compilation c = compile_graph(g, off);
  TileAccessCache without(false), with(true);
  int kernels = 0, differ = 0;
  for (const Kernel& k : c.schedule.kernels) {
    if (c.loop_ir.nodes[static_cast<size_t>(k.nodes.at(0))].kind == LoopKind::Host) continue;
    ++kernels;
    KernelCost own = kernel_cost(c.loop_ir, k, off.codegen, true);
    KernelCost shared = kernel_cost(c.loop_ir, k, off.codegen, true, &without);
    KernelCost chained = kernel_cost(c.loop_ir, k, off.codegen, true, &with);
    EXPECT_EQ(own.lmu_bytes, shared.lmu_bytes) << k.name;
    EXPECT_EQ(own.hbm_bytes, shared.hbm_bytes) << k.name;
    differ += chained.lmu_bytes != shared.lmu_bytes;
  }
  EXPECT_GT(kernels, 3);
  EXPECT_GT(differ, 0);  // chains do change a kernel's local memory: the check above can fail
  KernelCostMemo memo;
  Compilation m = compile_with_memo(g, off, memo);
  EXPECT_EQ(print_program(m.code.program), print_program(c.code.program));
}

// Rotary's rotate_half (cat(-x2, x1)) joins in local memory (schedule.cpp, join_problem;
// tile_walk.h, Join): its two parts move into column windows of one register (vxe.mov with a
// destination row stride), so the attention kernel holds the rotary and nothing goes through
// HBM; the outputs match the reference, prefill and decode, on whole rows and in row tiles.
TEST(EndToEnd, RotaryConcatenationJoinsInLocalMemory) {
  for (const char* phase : {"decode", "prefill"})
    for (int64_t lmu_kib : {0, 2}) {  // the preset's local memory; 2 KiB: a few rows per tile
      const bool decode = std::string(phase) == "decode";
      WorkloadSpec w =
          resolve_workload("tiny-llama", {std::string("phase=") + phase, decode ? "context=24" : "context=0"});
      if (!decode) w.seq_len = 6;
      ArchConfig arch = small_arch();
      if (lmu_kib) arch.lmu.capacity_kib = lmu_kib;
      RunOutcome o = run_job(w, arch, "greedy", true);
      ASSERT_TRUE(o.check.has_value());
      EXPECT_TRUE(o.check->ok) << phase << " " << lmu_kib << ": " << o.check->worst;
      int64_t tiled = 0;
      for (const auto& t : o.comp.code.tiling) tiled += t.kernel.find("rope") != std::string::npos && t.tiles > 1;
      if (lmu_kib) {
        EXPECT_GT(tiled, 0) << phase;
      }
      for (const Kernel& k : o.comp.schedule.kernels)
        for (const std::string& b : k.hbm_outputs) EXPECT_EQ(b.find("_rot"), std::string::npos) << k.name << " " << b;
      size_t windows = 0;
      for (const Instruction& in : o.comp.code.program.code)
        windows += in.opcode == Opcode::VxeMov && in.lm_rs > in.cols;
      EXPECT_GT(windows, 0u) << phase;
    }
}

// Mixture of experts on the LPU (docs/workloads.md, "Mixture of experts"): every expert matmul
// streams its rows' experts straight from the weight (sxe.gemm_gather; the gathers emit
// nothing), the program prints, parses, encodes and decodes back to itself, the outputs match
// the reference fused and unfused, and the step reads about its compulsory bytes.
TEST(EndToEnd, MixtureOfExpertsStreamsTheSelectedExperts) {
  WorkloadSpec w = resolve_workload("tiny-llama", {"experts=4", "experts_per_token=2", "context=24"});
  for (const std::string policy : {"none", "greedy"}) {
    RunOutcome o = run_job(w, small_arch(), policy, true);
    ASSERT_TRUE(o.check.has_value());
    EXPECT_TRUE(o.check->ok) << policy << ": " << o.check->worst;
    const Program& p = o.comp.code.program;
    size_t gathered = 0, gathers = 0;
    for (const Instruction& in : p.code) {
      gathered += in.opcode == Opcode::SxeGemmGather;
      gathers += in.opcode == Opcode::DmaGather;
    }
    EXPECT_EQ(gathered, 3u * 2) << policy;  // gate, up, down in each of the 2 layers (one row tile each)
    EXPECT_EQ(gathers, 0u) << policy;
    Program q = parse_program(print_program(p), "moe.s");
    ASSERT_EQ(q.code.size(), p.code.size());
    for (size_t i = 0; i < p.code.size(); ++i)
      EXPECT_TRUE(p.code[i].same_as(q.code[i])) << print_instruction(p.code[i]);
    Program d = decode_program(encode_program(p), "moe.lpubin");
    ASSERT_EQ(d.code.size(), p.code.size());
    for (size_t i = 0; i < p.code.size(); ++i)
      EXPECT_TRUE(p.code[i].same_as(d.code[i])) << print_instruction(p.code[i]);
    // No expert is materialised or read twice: within 2% of the compulsory bytes (the two experts
    // of each token; the rest is small activations read back), and little written.
    // (Fused; unfused, every intermediate activation also goes through HBM.)
    if (policy != "greedy") continue;
    const double compulsory = static_cast<double>(o.comp.compulsory_hbm_bytes);
    EXPECT_LT(static_cast<double>(o.sim.stats.hbm_read_bytes), 1.02 * compulsory);
    EXPECT_LT(static_cast<double>(o.sim.stats.hbm_write_bytes), 0.05 * compulsory);
  }
}

// sxe.gemm_gather's fields are checked where they are read: the slab size is an immediate whole
// number >= 1 and the row indices live in local memory.
TEST(EndToEnd, GatheredGemmOperandsAreChecked) {
  const std::string head = ".program t\n.buffer w hbm:0x0 f32[4, 16] weight\n.kernel 0 k\n";
  auto error = [&](const std::string& line) {
    try {
      parse_program(head + line + "\nhalt\n", "t.s");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string gemm = "  sxe.gemm_gather f32 [2, 4, 4] lm:0x100 <- lm:0x0 [4, 1], hbm:0x0 [4, 1], ";
  EXPECT_EQ(error(gemm + "lm:0x80 [1, 0], #16"), "no error");
  EXPECT_NE(error(gemm + "lm:0x80 [1, 0], #0").find("t.s:4"), std::string::npos);
  EXPECT_NE(error(gemm + "lm:0x80 [1, 0], #2.5").find("slab size"), std::string::npos);
  EXPECT_NE(error(gemm + "#3, #16").find("row indices must be in local memory"), std::string::npos);
  EXPECT_NE(error(gemm + "lm:0x80 [1, 0]").find("t.s:4"), std::string::npos);
}

// A decoder layer's intermediates share the HBM of the same ones in the layer before
// (codegen/hbm_assign.h), and the values stay right however the engines overlap the layers (the
// scoreboard orders each write after the reads of the bytes' previous owner). Two more layers
// add their weights, caches and outputs, and of their intermediates only the residual stream:
// the next layer reads it in the kernel that writes its own (the fused residual add), so two
// layers' copies live at once and keep bytes of their own. Without the sharing, every
// intermediate of the two layers would be added.
TEST(EndToEnd, LayersShareTheirIntermediatesHbm) {
  auto spec = [](const char* phase, int64_t seq, int64_t ctx, int64_t layers) {
    WorkloadSpec w;
    w.name = w.model = "tiny-opt";
    w.phase = phase;
    w.seq_len = seq;
    w.context = ctx;
    TransformerShape m = *find_transformer("tiny-opt");
    m.layers = layers;
    w.decoder = m;
    return w;
  };
  // Regions are rounded up to the config's HBM alignment (a whole interleave round).
  const auto align = static_cast<uint64_t>(compile_options_for(small_arch(), "greedy").codegen.hbm_alignment);
  auto aligned = [align](const BufferDecl& b) {
    return (static_cast<uint64_t>(b.bytes()) + align - 1) / align * align;
  };
  for (auto [phase, seq, ctx] : {std::tuple{"decode", 1, 16}, std::tuple{"prefill", 12, 0}}) {
    uint64_t bytes[2] = {0, 0}, persistent[2] = {0, 0}, unshared[2] = {0, 0}, residual = 0;
    for (int64_t i = 0; i < 2; ++i) {
      const int64_t layers = 3 + 2 * i;
      RunOutcome o = run_job(spec(phase, seq, ctx, layers), small_arch(), "greedy", true);
      ASSERT_TRUE(o.check.has_value());
      EXPECT_TRUE(o.check->ok) << phase << " at " << layers << " layers: " << o.check->worst;
      const Program& p = o.comp.code.program;
      bytes[i] = p.hbm_bytes_allocated();
      std::map<uint64_t, int> layer1;  // layer 1's intermediates, by address
      for (const auto& b : p.buffers) {
        (b.role == BufferRole::Intermediate ? unshared[i] : persistent[i]) += aligned(b);
        if (b.role == BufferRole::Intermediate && b.name.rfind("l1.", 0) == 0) ++layer1[b.hbm_addr];
        if (b.name == "l0.ffn_residual") residual = aligned(b);
      }
      for (const auto& b : p.buffers) {
        if (b.role == BufferRole::Intermediate && b.name.rfind("l0.", 0) == 0 && b.name != "l0.ffn_residual" &&
            b.bytes() > 0) {
          EXPECT_EQ(layer1.count(b.hbm_addr), 1u) << phase << ": " << b.name << " has no layer-1 twin at its address";
        }
      }
    }
    ASSERT_GT(residual, 0u) << phase;
    EXPECT_EQ(bytes[1] - bytes[0], persistent[1] - persistent[0] + 2 * residual) << phase;
    EXPECT_GT(unshared[1] - unshared[0], 2 * residual) << phase << ": what the two layers' intermediates would take";
  }
}
