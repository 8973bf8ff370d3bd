// RTL co-simulation of the SXE (issue 8): the verilated MAC tree against a C++ reference
// (values) and against the closed-form timing of sim/model/sxe_timing.h (cycles).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "compare.h"
#include "model/sxe_timing.h"
#include "rtl_sxe.h"
#include "rtl_variants.h"
#include "sc_kernel.h"
#include "support/error.h"

using namespace lpu;
using namespace lpu::rtl;

namespace {

std::vector<int64_t> reference_gemv(int64_t K, int64_t N, const std::vector<int16_t>& W, const std::vector<int16_t>& x) {
  std::vector<int64_t> y(static_cast<size_t>(N), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      y[static_cast<size_t>(n)] += int64_t{W[static_cast<size_t>(k * N + n)]} * x[static_cast<size_t>(k)];
  return y;
}

double approx_cycles(const GemvCase& c) {
  return sim::mac_tree_cycles(c.K, (c.N + c.mac_trees - 1) / c.mac_trees, 1, c.lanes, c.pipeline_depth,
                              c.beats_per_cycle);
}

}  // namespace

TEST(RtlGemv, ValuesEqualReferenceForSeveralShapes) {
  struct Shape {
    int64_t K, N;
    int trees, lanes;
  };
  // K below, at and off a multiple of lanes; N below the tree count (idle trees); 1 lane; 64.
  const std::vector<Shape> shapes = {{1, 1, 1, 1},    {5, 3, 4, 16},   {16, 16, 2, 16}, {37, 29, 3, 8},
                                     {300, 17, 8, 16}, {129, 40, 5, 64}, {64, 8, 1, 1}};
  uint32_t seed = 10;
  for (int depth : rtl_pipeline_depths())
    for (const Shape& s : shapes) {
      auto W = random_int16(static_cast<size_t>(s.K * s.N), ++seed);
      auto x = random_int16(static_cast<size_t>(s.K), ++seed);
      RtlGemvResult r = run_gemv_rtl(s.lanes, depth, s.trees, 1.0, s.K, s.N, W, x);
      EXPECT_EQ(r.y, reference_gemv(s.K, s.N, W, x))
          << s.K << "x" << s.N << " trees " << s.trees << " lanes " << s.lanes << " depth " << depth;
    }
}

// The extreme products (-32768 * -32768) summed over a long K need more than 32 bits and
// the right sign extension through the tree and accumulator.
TEST(RtlGemv, ExtremeOperandsAccumulateExactly) {
  const int64_t K = 4096, N = 4;
  std::vector<int16_t> W(static_cast<size_t>(K * N)), x(static_cast<size_t>(K), -32768);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) W[static_cast<size_t>(k * N + n)] = n % 2 ? int16_t{32767} : int16_t{-32768};
  RtlGemvResult r = run_gemv_rtl(64, 8, 2, 1.0, K, N, W, x);
  EXPECT_EQ(r.y, reference_gemv(K, N, W, x));
  EXPECT_EQ(r.y[0], int64_t{1} << 42);
}

// The acceptance check: 6 shapes x every verilated depth (each preset's included), approximate
// cycles within 1% of the RTL.
TEST(RtlGemv, ClosedFormWithinOnePercentOfRtl) {
  std::set<std::pair<int64_t, int64_t>> shapes;
  std::set<int> depths;
  for (const GemvCase& c : standard_cases()) {
    if (c.beats_per_cycle != 1.0) continue;
    GemvComparison r = compare_gemv(c);
    shapes.insert({c.K, c.N});
    depths.insert(c.pipeline_depth);
    EXPECT_TRUE(r.values_ok) << c.K << "x" << c.N;
    EXPECT_LT(std::abs(r.error_pct), 1.0) << c.K << "x" << c.N << " depth " << c.pipeline_depth << ": rtl "
                                          << r.rtl_cycles << " approx " << r.approx_cycles;
    EXPECT_EQ(r.rtl_stall_cycles, 0u) << "a full-rate stream never starves the tree";
    // sxe_gemm_cycles (bytes/cycle view) and mac_tree_cycles (beats view) agree.
    EXPECT_DOUBLE_EQ(r.approx_cycles, approx_cycles(c));
  }
  EXPECT_GE(shapes.size(), 5u);
  for (int preset_depth : {8, 10, 12})  // lpu-small, lpu-fpga-u55c, lpu-asic
    EXPECT_TRUE(depths.count(preset_depth)) << "no case at depth " << preset_depth;
}

// A weight stream slower than the tree shows up as stall cycles, and the formula's
// ceil(beats / rate) predicts both them and the total.
TEST(RtlGemv, BackPressureStallsMatchFormula) {
  int cases = 0;
  for (const GemvCase& c : standard_cases()) {
    if (c.beats_per_cycle >= 1.0) continue;
    ++cases;
    GemvComparison r = compare_gemv(c);
    GemvCase full = c;
    full.beats_per_cycle = 1.0;
    GemvComparison f = compare_gemv(full);
    EXPECT_TRUE(r.values_ok);
    EXPECT_GT(r.rtl_stall_cycles, 0u);
    EXPECT_EQ(r.rtl_cycles - f.rtl_cycles, r.rtl_stall_cycles) << "every stall cycle delays the result";
    EXPECT_LT(std::abs(r.error_pct), 1.0) << c.K << "x" << c.N << " rate " << c.beats_per_cycle;
    EXPECT_LE(std::abs(r.approx_stall_cycles - static_cast<double>(r.rtl_stall_cycles)),
              0.05 * static_cast<double>(r.rtl_stall_cycles));
  }
  EXPECT_GE(cases, 2);
}

// Tighter than the 5% acceptance bound: over many stream rates the closed form is off by at
// most the one cycle that floating-point rounding of ceil(beats / rate) can cost.
TEST(RtlGemv, StreamRateSweepAgreesToOneCycle) {
  auto W = random_int16(100 * 24, 7);
  auto x = random_int16(100, 8);
  for (double r : {1.0, 0.9, 0.75, 0.7, 2.0 / 3, 0.5, 0.4, 1.0 / 3, 0.3, 0.25, 0.2, 0.1, 0.05}) {
    GemvCase c{100, 24, 3, 16, 4, r};
    RtlGemvResult res = run_gemv_rtl(c.lanes, c.pipeline_depth, c.mac_trees, r, c.K, c.N, W, x);
    EXPECT_LE(std::abs(approx_cycles(c) - static_cast<double>(res.cycles)), 1.0) << "rate " << r;
    EXPECT_EQ(res.y, reference_gemv(c.K, c.N, W, x));
  }
}

TEST(RtlGemv, RepeatedRunsInOneProcessAreIndependent) {
  auto W = random_int16(200 * 30, 3);
  auto x = random_int16(200, 4);
  RtlGemvResult a = run_gemv_rtl(16, 4, 4, 0.6, 200, 30, W, x);
  RtlGemvResult b = run_gemv_rtl(16, 8, 4, 1.0, 200, 30, W, x);
  RtlGemvResult c = run_gemv_rtl(16, 4, 4, 0.6, 200, 30, W, x);
  EXPECT_EQ(a.y, c.y);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.cycles, c.cycles);
  EXPECT_EQ(a.stall_cycles, c.stall_cycles);
  EXPECT_EQ(b.cycles, static_cast<uint64_t>(8 * 13 + 8));  // 8 columns x 13 beats + depth
}

TEST(RtlGemv, BadArgumentsAreInputErrors) {
  std::vector<int16_t> W(12), x(4);
  std::vector<int> depths = rtl_pipeline_depths();
  int no_variant = *std::max_element(depths.begin(), depths.end()) + 1;
  EXPECT_THROW(run_gemv_rtl(0, 8, 1, 1.0, 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(rtl_max_lanes() + 1, 8, 1, 1.0, 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(16, 8, 0, 1.0, 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(16, 8, 1, 0.0, 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(16, 8, 1, 1.5, 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(16, 8, 1, std::nan(""), 4, 3, W, x), InputError);
  EXPECT_THROW(run_gemv_rtl(16, 8, 1, 1.0, 4, 4, W, x), InputError);  // W is not K x N
  EXPECT_THROW(run_gemv_rtl(16, 8, 1, 1.0, 3, 4, W, x), InputError);  // x is not K
  try {
    run_gemv_rtl(16, no_variant, 1, 1.0, 4, 3, W, x);
    ADD_FAILURE() << "depth " << no_variant << " has no variant";
  } catch (const InputError& e) {
    std::string built;
    for (int d : depths) built += (built.empty() ? "" : ", ") + std::to_string(d);
    EXPECT_NE(std::string(e.what()).find("built: " + built), std::string::npos) << e.what();
  }
}

TEST(RtlGemv, WritesVcdOfEveryTree) {
  std::string path = (std::filesystem::temp_directory_path() / "lpu_test_rtl.vcd").string();
  std::filesystem::remove(path);
  auto W = random_int16(40 * 6, 5);
  auto x = random_int16(40, 6);
  RtlGemvResult r = run_gemv_rtl(16, 4, 2, 0.5, 40, 6, W, x, path);
  EXPECT_EQ(r.y, reference_gemv(40, 6, W, x));
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string vcd = ss.str();
  EXPECT_NE(vcd.find("$scope module sxe.tree0.rtl"), std::string::npos);
  EXPECT_NE(vcd.find("$scope module sxe.tree1.rtl"), std::string::npos);
  EXPECT_NE(vcd.find("out_valid"), std::string::npos);
  // Time stamps are in ps of a 1 ns clock; two reset edges precede cycle 0, so the dump
  // must reach at least cycle `cycles` - 1.
  size_t last = vcd.rfind("\n#");
  ASSERT_NE(last, std::string::npos);
  EXPECT_GE(std::stoull(vcd.substr(last + 2)), 1000 * (r.cycles + 1)) << "dumped through the run";
  std::filesystem::remove(path);
  EXPECT_THROW(run_gemv_rtl(16, 4, 2, 1.0, 40, 6, W, x, "/nonexistent-dir/x.vcd"), InputError);
}

// ---- The MAC tree alone, clocked by hand: latency, lane gating, output back-pressure ----

namespace {

template <class Model>
class TreeTb {
 public:
  using Bus = sc_dt::sc_bv<LPU_RTL_MAX_LANES * 16>;
  sc_core::sc_signal<bool> clk{"clk"}, rst{"rst", true}, in_last{"in_last"}, in_valid{"in_valid"},
      in_ready{"in_ready"}, out_valid{"out_valid"}, out_ready{"out_ready", true};
  sc_core::sc_signal<uint32_t> cfg_lanes{"cfg_lanes", LPU_RTL_MAX_LANES};
  sc_core::sc_signal<Bus> in_w{"in_w"}, in_x{"in_x"};
  sc_core::sc_signal<uint64_t> out_y{"out_y"};
  Model rtl{"rtl"};

  TreeTb() {
    rtl.clk(clk);
    rtl.rst(rst);
    rtl.cfg_lanes(cfg_lanes);
    rtl.in_w(in_w);
    rtl.in_x(in_x);
    rtl.in_last(in_last);
    rtl.in_valid(in_valid);
    rtl.in_ready(in_ready);
    rtl.out_y(out_y);
    rtl.out_valid(out_valid);
    rtl.out_ready(out_ready);
    edge();
    edge();
    rst.write(false);
  }

  // Settles the inputs written so far, then one rising edge. Returns whether a beat was
  // accepted at this edge (in_valid && in_ready as the registers saw them).
  bool edge() {
    sc_core::sc_start(0.5, sc_core::SC_NS);
    bool accepted = in_valid.read() && in_ready.read();
    clk.write(true);
    sc_core::sc_start(0.5, sc_core::SC_NS);
    clk.write(false);
    return accepted;
  }

  void beat(const std::vector<int16_t>& w, const std::vector<int16_t>& x, bool last) {
    Bus bw, bx;
    for (size_t i = 0; i < w.size(); ++i) {
      int lo = static_cast<int>(i) * 16;
      bw.range(lo + 15, lo) = static_cast<uint16_t>(w[i]);
      bx.range(lo + 15, lo) = static_cast<uint16_t>(x[i]);
    }
    in_w.write(bw);
    in_x.write(bx);
    in_last.write(last);
    in_valid.write(true);
  }
};

template <class Model>
void check_latency(int depth) {
  fresh_systemc_context();
  auto tb = std::make_unique<TreeTb<Model>>();
  tb->beat({3, -4}, {5, 6}, true);
  ASSERT_TRUE(tb->edge());
  tb->in_valid.write(false);
  int edges = 1;
  while (!tb->out_valid.read() && edges < 100) {
    tb->edge();
    ++edges;
  }
  EXPECT_EQ(edges, depth) << "register stages from an accepted beat to the delivered result";
  EXPECT_EQ(static_cast<int64_t>(tb->out_y.read()), 3 * 5 - 4 * 6);
  tb->edge();
  EXPECT_FALSE(tb->out_valid.read()) << "one result per dot product";
}

}  // namespace

TEST(RtlMacTree, LatencyIsPipelineDepthInEveryVariant) {
#define LPU_CHECK_LATENCY(depth) check_latency<Vsxe_mac_tree_d##depth>(depth);
  LPU_RTL_VARIANTS(LPU_CHECK_LATENCY)
#undef LPU_CHECK_LATENCY
}

TEST(RtlMacTree, LanesAtOrAboveCfgLanesAreGated) {
  fresh_systemc_context();
  auto tb = std::make_unique<TreeTb<Vsxe_mac_tree_d4>>();
  tb->cfg_lanes.write(3);
  std::vector<int16_t> w(LPU_RTL_MAX_LANES, 1000), x(LPU_RTL_MAX_LANES, -7);
  tb->beat(w, x, true);
  tb->edge();
  tb->in_valid.write(false);
  for (int i = 0; i < 10 && !tb->out_valid.read(); ++i) tb->edge();
  ASSERT_TRUE(tb->out_valid.read());
  EXPECT_EQ(static_cast<int64_t>(tb->out_y.read()), 3 * 1000 * -7);
}

// With the output not taken, the whole pipeline holds: in_ready drops, the result stays put,
// and no beat offered meanwhile is lost or accumulated twice.
TEST(RtlMacTree, OutputBackPressureHoldsThePipeline) {
  fresh_systemc_context();
  auto tb = std::make_unique<TreeTb<Vsxe_mac_tree_d8>>();
  tb->out_ready.write(false);
  // Three dot products of two beats each: y = {1*1 + 2*1, 3*1 + 4*1, 5*1 + 6*1}.
  std::vector<int64_t> got;
  int beat = 0, cycles = 0, not_ready = 0;
  while (got.size() < 3 && cycles < 200) {
    if (beat < 6) tb->beat({static_cast<int16_t>(beat + 1)}, {1}, beat % 2 == 1);
    else tb->in_valid.write(false);
    // Release the output after it has been held for a while.
    if (cycles == 30) tb->out_ready.write(true);
    uint64_t held = tb->out_y.read();
    bool was_valid = tb->out_valid.read();
    if (tb->edge()) ++beat;
    if (was_valid && tb->out_ready.read()) got.push_back(static_cast<int64_t>(held));
    if (was_valid && !tb->out_ready.read()) {
      EXPECT_EQ(tb->out_y.read(), held) << "a result not taken stays in the output register";
      EXPECT_FALSE(tb->in_ready.read());
      ++not_ready;
    }
    ++cycles;
  }
  EXPECT_EQ(got, (std::vector<int64_t>{3, 7, 11}));
  EXPECT_GT(not_ready, 10);
}
