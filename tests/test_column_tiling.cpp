// Column tiling (issue #14 item 4): a matmul whose output row does not fit local memory is
// tiled along N, each column tile streaming only its weight columns; a row reduction is never
// split. The rule is plan_tiles (codegen/tile_plan.h), the node split codegen/column_split.h.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "codegen/column_split.h"
#include "codegen/lpu_codegen.h"
#include "driver/compile.h"
#include "jobs/jobs.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "test_util.h"

using namespace lpu;

namespace {
using testutil::builtin;
using testutil::small_arch;

WorkloadSpec gemv(int64_t k, int64_t n) {
  WorkloadSpec w = builtin("gemv", 1, 0);
  w.params["k"] = k;
  w.params["n"] = n;
  return w;
}

Compilation compile(const WorkloadSpec& w, int64_t lmu, const std::string& fusion = "greedy") {
  CompileOptions o;
  o.fusion = fusion;
  o.codegen.lmu_bytes = lmu;
  o.codegen.fold_loops = false;  // one instruction block per tile, to count them
  return compile_graph(build_graph(w), o);
}

// Instructions of kernel `id` with opcode `op`, and the HBM bytes all of them move.
std::vector<Instruction> of_kernel(const Program& p, int id, Opcode op) {
  std::vector<Instruction> v;
  for (const auto& in : p.code)
    if (in.kernel == id && in.opcode == op) v.push_back(in);
  return v;
}
int64_t hbm_bytes(const Program& p, int id) {
  int64_t b = 0;
  for (const auto& in : p.code) {
    if (in.kernel != id) continue;
    if (in.opcode == Opcode::DmaLoad || in.opcode == Opcode::DmaStore) b += in.rows * in.cols * dtype_bytes(in.dtype);
    if (in.opcode == Opcode::SxeGemm) b += in.depth * in.cols * dtype_bytes(in.dtype);
  }
  return b;
}

ArchConfig arch_with_lmu(int64_t kib) {
  ArchConfig a = small_arch();
  a.lmu.capacity_kib = kib;
  return a;
}
}  // namespace

TEST(ColumnTiling, WholeRowsWhileTheRowFits) {
  Compilation c = compile(gemv(256, 256), 64 * 1024);
  ASSERT_EQ(c.code.tiling.size(), 1u);
  EXPECT_EQ(c.code.tiling[0].col_tiles, 1);
  EXPECT_EQ(c.code.tiling[0].tile_cols, 0);
}

// [1, 512] x [512, 4096] fp32 in 16 KiB: a whole row (2 KiB of x + 16 KiB of y) does not fit,
// double-buffered tiles of 4 * cw bytes beside x (row-invariant: resident) do for cw <= 1792, so 3
// column tiles, balanced to 1366 columns and rounded up to 1376. W is read exactly once.
TEST(ColumnTiling, GemvStreamsEachWeightColumnOnce) {
  const int64_t K = 512, N = 4096, lmu = 16 * 1024;
  Compilation c = compile(gemv(K, N), lmu);
  ASSERT_EQ(c.code.tiling.size(), 1u);
  const KernelTiling& t = c.code.tiling[0];
  EXPECT_EQ(t.col_tiles, 3);
  EXPECT_EQ(t.tile_cols, 1376);  // 4096 / 3 rounded up to 32 columns
  EXPECT_EQ(t.tiles, 3);
  EXPECT_LE(t.hoisted_bytes + 2 * t.tile_bytes, lmu);
  auto gemms = of_kernel(c.code.program, 0, Opcode::SxeGemm);
  ASSERT_EQ(gemms.size(), 3u);
  int64_t cols = 0;
  for (const auto& g : gemms) cols += g.cols;
  EXPECT_EQ(cols, N);
  EXPECT_EQ(gemms[1].hbm_addr - gemms[0].hbm_addr, static_cast<uint64_t>(1376 * K * 4));  // W^T: n strides by K
  // x (one row) is row-invariant, so it stays resident across the column tiles: read once.
  EXPECT_EQ(hbm_bytes(c.code.program, 0), K * N * 4 + K * 4 + N * 4);
  // The cost model the scheduler sees counts the same bytes as the program moves.
  EXPECT_EQ(kernel_cost(c.loop_ir, c.schedule.kernels[0], CodegenOptions{lmu}).hbm_bytes, hbm_bytes(c.code.program, 0));
}

TEST(ColumnTiling, GemvFunctionalWithColumnTiles) {
  RunOutcome o = run_job(gemv(512, 4096), arch_with_lmu(16), "greedy", true);
  EXPECT_EQ(o.comp.code.tiling[0].col_tiles, 3);
  ASSERT_TRUE(o.check.has_value());
  EXPECT_TRUE(o.check->ok) << o.check->worst;
}

// 64 rows (a prefill-shaped GEMM) in 8 KiB: a whole row (1 KiB of x + 8 KiB of y) does not
// fit, so tiles are rows x columns; W is streamed once per row tile and x re-read once per
// column tile, which the cost model counts exactly as the program moves it.
TEST(ColumnTiling, GemmTilesRowsAndColumns) {
  const int64_t M = 64, K = 256, N = 2048, lmu = 8 * 1024;
  WorkloadSpec w = gemv(K, N);
  w.seq_len = M;
  Compilation c = compile(w, lmu);
  ASSERT_EQ(c.code.tiling.size(), 1u);
  const KernelTiling& t = c.code.tiling[0];
  EXPECT_GT(t.col_tiles, 1);
  EXPECT_LE(t.hoisted_bytes + 2 * t.tile_bytes, lmu);
  int64_t row_tiles = (M + t.tile_rows - 1) / t.tile_rows;
  EXPECT_EQ(t.tiles, row_tiles * t.col_tiles);
  EXPECT_EQ(hbm_bytes(c.code.program, 0), (row_tiles * K * N + t.col_tiles * M * K + M * N) * 4);
  EXPECT_EQ(kernel_cost(c.loop_ir, c.schedule.kernels[0], CodegenOptions{lmu}).hbm_bytes, hbm_bytes(c.code.program, 0));
  // The decision is recorded in the schedule and shown where users read it (--emit schedule, -json).
  ASSERT_TRUE(c.schedule.kernels[0].tiling.has_value());
  EXPECT_EQ(c.schedule.kernels[0].tiling->tiles, t.tiles);
  EXPECT_EQ(c.schedule.kernels[0].tiling->tile_cols, t.tile_cols);
  EXPECT_EQ(c.schedule.kernels[0].tiling->buffers, 2);
  std::string text = print_schedule(c.loop_ir, c.schedule);
  EXPECT_NE(text.find(strcat("tiles=", t.tiles, " (", t.tile_rows)), std::string::npos) << text;
  EXPECT_NE(text.find(strcat(" x ", t.tile_cols, " columns, ", t.col_tiles, " per row)")), std::string::npos) << text;
  auto js = nlohmann::json::parse(schedule_to_json(c.loop_ir, c.schedule));
  EXPECT_EQ(js["kernels"][0]["tiling"]["col_tiles"].get<int64_t>(), t.col_tiles);
  RunOutcome o = run_job(w, arch_with_lmu(8), "greedy", true);
  ASSERT_TRUE(o.check.has_value());
  EXPECT_TRUE(o.check->ok) << o.check->worst;
}

// The tiny models with 1 KiB of local memory: their FFN matmuls with the fused epilogues
// (fc1 + bias + relu; SwiGLU's gate/up + silu + mul), the projections and the element-wise
// halves of the norms run in column tiles (their LM heads, 96 columns, fit one row
// single-buffered), and the results equal the reference within the fp32 tolerance.
TEST(ColumnTiling, TinyModelsFunctionalInOneKiB) {
  for (const std::string f : {"tiny-opt-decode", "tiny-llama-decode-32"})
    for (const std::string policy : {"greedy", "none"}) {
      WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + f + ".yaml");
      RunOutcome o = run_job(w, arch_with_lmu(1), policy, true);
      int col_tiled = 0, ffn = 0;
      for (const auto& t : o.comp.code.tiling) {
        col_tiled += t.col_tiles > 1;
        bool ffn_kernel = t.kernel.find("fc1") != std::string::npos || t.kernel.find("gate_") != std::string::npos;
        ffn += t.col_tiles > 1 && ffn_kernel;
      }
      EXPECT_GE(col_tiled, 2) << f << "/" << policy;
      EXPECT_GE(ffn, 2) << f << "/" << policy;  // one per layer
      ASSERT_TRUE(o.check.has_value());
      EXPECT_TRUE(o.check->ok) << f << "/" << policy << ": " << o.check->worst;
    }
}

TEST(ColumnTiling, RowReductionIsNeverSplit) {
  Compilation c = compile(builtin("softmax", 4, 64), 64 * 1024);
  ASSERT_EQ(c.schedule.kernels.size(), 1u);
  ColumnSplit s = analyze_column_split(c.loop_ir, c.schedule.kernels[0]);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.why_not.find("reduces over the row"), std::string::npos) << s.why_not;
  // A matmul with an element-wise epilogue splits, both nodes.
  Compilation g = compile(gemv(64, 64), 64 * 1024);
  ColumnSplit m = analyze_column_split(g.loop_ir, g.schedule.kernels[0]);
  EXPECT_TRUE(m.ok) << m.why_not;
  EXPECT_EQ(m.width, 64);
}

TEST(ColumnTiling, WideSoftmaxIsAClearError) {
  try {
    compile(builtin("softmax", 4, 8192), 16 * 1024);
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel k0_"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes of local memory"), std::string::npos) << m;
    EXPECT_NE(m.find("cannot be tiled in columns"), std::string::npos) << m;
    EXPECT_NE(m.find("reduces over the row"), std::string::npos) << m;
  }
}

// Decode attention over 4096 cached tokens in 16 KiB: the scores row (16 KiB fp32) does not fit
// at all, so the scores matmul runs in column tiles, and the scheduler declines to fuse the
// softmax's row reductions into it, naming the reduction (no config lets the softmax itself
// fit here, so this stops at the schedule).
TEST(ColumnTiling, SchedulerKeepsRowReductionsOutOfColumnTiledMatmuls) {
  WorkloadSpec w = builtin("attention_decode", 1, 0);
  w.params["heads"] = 2;
  w.params["head_dim"] = 64;
  w.context = 4096;
  LoopProgram lp = lower_to_loop_ir(normalize_graph(build_graph(w)));
  CodegenOptions cg;
  cg.lmu_bytes = 16 * 1024;
  ScheduleOptions so;
  so.lmu_bytes = cg.lmu_bytes;
  so.kernel_cost = [&](const Kernel& k, bool with_traffic) { return kernel_cost(lp, k, cg, with_traffic); };
  Schedule s = schedule_program(lp, so);
  bool refused = false;
  for (const auto& d : s.decisions) refused |= d.reason.find("reduces over the row") != std::string::npos;
  EXPECT_TRUE(refused);
  bool found = false;
  for (const Kernel& k : s.kernels) {
    bool scores = false, red = false;
    for (int n : k.nodes) {
      const LoopNode& ln = lp.nodes[static_cast<size_t>(n)];
      scores |= ln.kind == LoopKind::Matmul && ln.name.find("scores") != std::string::npos;
      red |= ln.kind == LoopKind::Reduction;
    }
    if (!scores) continue;
    found = true;
    EXPECT_FALSE(red) << k.name;
    KernelCost c = kernel_cost(lp, k, cg);
    EXPECT_TRUE(c.fits && c.col_tiled) << k.name;
  }
  EXPECT_TRUE(found);
}
