// RTL vs approximate model: GEMV microbenchmarks run through the verilated MAC trees
// (run_gemv_rtl) and through the closed form (sxe_gemm_cycles). The docs/rtl.md table
// ("RTL co-simulation"), build/rtl_compare and tests/test_rtl.cpp share these cases.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lpu::rtl {

struct GemvCase {
  int64_t K = 0, N = 0;         // W is [K x N]
  int mac_trees = 1;
  int lanes = 1;
  int pipeline_depth = 8;
  double beats_per_cycle = 1;   // per tree; < 1 is a weight stream slower than the tree
};

struct GemvComparison {
  GemvCase c;
  uint64_t rtl_cycles = 0, rtl_stall_cycles = 0;
  double approx_cycles = 0, approx_stall_cycles = 0;  // stall: cycles beyond a full-rate stream
  double error_pct = 0;                               // (approx - rtl) / rtl, in percent
  bool values_ok = false;                             // RTL y equals the int64 reference
};

// Six shapes x depths 4 and 8 at full rate, then back-pressure cases (beats_per_cycle < 1).
std::vector<GemvCase> standard_cases();

// Deterministic int16 data over the full range (so sign extension and wide sums are exercised).
std::vector<int16_t> random_int16(size_t n, uint32_t seed);

// Runs the case on the RTL with random data and compares values and cycles.
GemvComparison compare_gemv(const GemvCase& c, uint32_t seed = 1);

// Fixed-width text table, one row per comparison.
std::string format_comparison(const std::vector<GemvComparison>& rows);

}  // namespace lpu::rtl
