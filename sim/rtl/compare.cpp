#include "compare.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "model/sxe_timing.h"
#include "rtl_sxe.h"

namespace lpu::rtl {

std::vector<GemvCase> standard_cases() {
  // lpu-small's SXE (8 trees x 16 lanes), a 64-lane tree, and the ASIC-like 32 x 64; K and N
  // that do not divide by lanes and trees are in on purpose (partial beats, idle trees).
  const std::vector<GemvCase> shapes = {
      {64, 64, 8, 16, 0, 1},      {256, 256, 8, 16, 0, 1},   {1000, 100, 8, 16, 0, 1},
      {768, 768, 8, 16, 0, 1},    {2048, 512, 8, 64, 0, 1},  {4096, 256, 32, 64, 0, 1},
  };
  std::vector<GemvCase> cases;
  for (int depth : rtl_pipeline_depths())
    for (GemvCase c : shapes) {
      c.pipeline_depth = depth;
      cases.push_back(c);
    }
  // Back-pressure: the weight stream delivers fewer beats than the tree takes.
  for (int depth : rtl_pipeline_depths()) {
    cases.push_back({768, 768, 8, 16, depth, 0.5});
    cases.push_back({1000, 100, 8, 16, depth, 0.3});
  }
  cases.push_back({2048, 512, 8, 64, 8, 0.75});
  return cases;
}

std::vector<int16_t> random_int16(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-32768, 32767);
  std::vector<int16_t> v(n);
  for (auto& e : v) e = static_cast<int16_t>(d(gen));
  return v;
}

GemvComparison compare_gemv(const GemvCase& c, uint32_t seed) {
  std::vector<int16_t> W = random_int16(static_cast<size_t>(c.K * c.N), seed);
  std::vector<int16_t> x = random_int16(static_cast<size_t>(c.K), seed + 1);
  RtlGemvResult r = run_gemv_rtl(c.lanes, c.pipeline_depth, c.mac_trees, c.beats_per_cycle, c.K, c.N, W, x);

  GemvComparison out;
  out.c = c;
  out.rtl_cycles = r.cycles;
  out.rtl_stall_cycles = r.stall_cycles;
  // The device model's view: weight bytes per cycle for all trees (2-byte weights, FP16's size).
  constexpr int kWeightBytes = 2;
  double bytes_per_cycle = c.beats_per_cycle * c.mac_trees * c.lanes * kWeightBytes;
  auto approx = [&](double bpc) {
    return sim::sxe_gemm_cycles(1, c.K, c.N, c.mac_trees, c.lanes, c.pipeline_depth, kWeightBytes, bpc);
  };
  out.approx_cycles = approx(bytes_per_cycle);
  out.approx_stall_cycles = out.approx_cycles - approx(static_cast<double>(c.mac_trees) * c.lanes * kWeightBytes);
  out.error_pct = 100.0 * (out.approx_cycles - static_cast<double>(r.cycles)) / static_cast<double>(r.cycles);

  out.values_ok = true;
  for (int64_t n = 0; n < c.N; ++n) {
    int64_t ref = 0;
    for (int64_t k = 0; k < c.K; ++k)
      ref += int64_t{W[static_cast<size_t>(k * c.N + n)]} * int64_t{x[static_cast<size_t>(k)]};
    out.values_ok = out.values_ok && r.y[static_cast<size_t>(n)] == ref;
  }
  return out;
}

std::string format_comparison(const std::vector<GemvComparison>& rows) {
  std::string s;
  char line[200];
  std::snprintf(line, sizeof line, "%-11s %5s %5s %5s %5s %10s %10s %7s %10s %10s  %s\n", "K x N", "trees", "lanes",
                "depth", "rate", "rtl_cyc", "approx_cyc", "err%", "rtl_stall", "apx_stall", "values");
  s += line;
  for (const auto& r : rows) {
    std::string shape = std::to_string(r.c.K) + "x" + std::to_string(r.c.N);
    std::snprintf(line, sizeof line, "%-11s %5d %5d %5d %5.2f %10llu %10.0f %+7.2f %10llu %10.0f  %s\n", shape.c_str(),
                  r.c.mac_trees, r.c.lanes, r.c.pipeline_depth, r.c.beats_per_cycle,
                  static_cast<unsigned long long>(r.rtl_cycles), r.approx_cycles, r.error_pct,
                  static_cast<unsigned long long>(r.rtl_stall_cycles), r.approx_stall_cycles,
                  r.values_ok ? "exact" : "MISMATCH");
    s += line;
  }
  return s;
}

}  // namespace lpu::rtl
