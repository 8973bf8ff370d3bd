#include "rtl_sxe.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <verilated.h>
#include <verilated_vcd_sc.h>

#include "gemv_bench.h"
#include "rtl_variants.h"  // generated: LPU_RTL_MAX_LANES, LPU_RTL_VARIANTS(X), the model headers
#include "sc_kernel.h"
#include "support/error.h"

namespace lpu::rtl {

namespace {

constexpr int kMaxTrees = 1024;  // one verilated instance each; more is a sweep, not a test

void validate(int lanes, int pipeline_depth, int mac_trees, double beats_per_cycle, int64_t K, int64_t N,
              const std::vector<int16_t>& W, const std::vector<int16_t>& x) {
  if (lanes < 1 || lanes > LPU_RTL_MAX_LANES)
    throw InputError(strcat("run_gemv_rtl: lanes = ", lanes, " is out of range 1 .. ", LPU_RTL_MAX_LANES,
                            " (the verilated tree has ", LPU_RTL_MAX_LANES, " multipliers)"));
  std::vector<int> depths = rtl_pipeline_depths();
  if (std::find(depths.begin(), depths.end(), pipeline_depth) == depths.end()) {
    std::string have;
    for (int d : depths) have += (have.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(strcat("run_gemv_rtl: no verilated variant with pipeline_depth = ", pipeline_depth,
                            "; built: ", have, " (LPU_RTL_DEPTHS in sim/rtl/CMakeLists.txt)"));
  }
  if (mac_trees < 1 || mac_trees > kMaxTrees)
    throw InputError(strcat("run_gemv_rtl: mac_trees = ", mac_trees, " is out of range 1 .. ", kMaxTrees));
  if (!(beats_per_cycle > 0 && beats_per_cycle <= 1))
    throw InputError(strcat("run_gemv_rtl: beats_per_cycle = ", beats_per_cycle, " is out of range (0, 1]"));
  if (K < 1 || N < 1 || K > (int64_t{1} << 31) || N > (int64_t{1} << 31))
    throw InputError(strcat("run_gemv_rtl: shape [", K, " x ", N, "] needs 1 <= K, N <= 2^31"));
  if (static_cast<int64_t>(W.size()) != K * N)
    throw InputError(strcat("run_gemv_rtl: W has ", W.size(), " elements, expected K * N = ", K * N));
  if (static_cast<int64_t>(x.size()) != K)
    throw InputError(strcat("run_gemv_rtl: x has ", x.size(), " elements, expected K = ", K));
}

template <class Model>
RtlGemvResult run(const GemvJob& job, int pipeline_depth, const std::string& vcd_path) {
  fresh_systemc_context();
  // Must precede the models' construction, or they are built without trace hooks.
  if (!vcd_path.empty()) Verilated::traceEverOn(true);
  RtlGemvResult res;
  res.y.assign(static_cast<size_t>(job.N), 0);
  auto bench = std::make_unique<GemvBench<Model, LPU_RTL_MAX_LANES * 16>>("sxe", job, res.y);
  std::unique_ptr<VerilatedVcdSc> vcd;
  try {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate: a Verilator trace opens only after
    if (!vcd_path.empty()) {
      vcd = std::make_unique<VerilatedVcdSc>();
      for (auto& t : bench->trees()) t->rtl.trace(vcd.get(), 99);
      vcd->open(vcd_path.c_str());
      if (!vcd->isOpen()) throw InputError("run_gemv_rtl: cannot write VCD " + vcd_path);
    }
    sc_core::sc_start();
  } catch (const sc_core::sc_report& r) {
    throw InternalError(strcat("SystemC: ", r.what()));
  }
  if (vcd) vcd->close();
  if (!bench->finished())
    throw SimulationStuck(strcat("RTL GEMV [", job.K, " x ", job.N, "] on ", job.mac_trees, " trees of ", job.lanes,
                                 " lanes, depth ", pipeline_depth, ": not all results after ", bench->cycles(),
                                 " cycles (tree 0 took ", bench->busiest().taken, " of ", bench->busiest().beats,
                                 " beats, delivered ", bench->busiest().results, " of ", bench->busiest().cols, ")"));
  res.cycles = bench->cycles();
  res.beats = bench->busiest().beats;
  res.stall_cycles = bench->busiest().stalls;
  return res;
}

}  // namespace

std::vector<int> rtl_pipeline_depths() {
  std::vector<int> d;
#define LPU_RTL_DEPTH(depth) d.push_back(depth);
  LPU_RTL_VARIANTS(LPU_RTL_DEPTH)
#undef LPU_RTL_DEPTH
  return d;
}

int rtl_max_lanes() { return LPU_RTL_MAX_LANES; }

RtlGemvResult run_gemv_rtl(int lanes, int pipeline_depth, int mac_trees, double beats_per_cycle, int64_t K,
                           int64_t N, const std::vector<int16_t>& W, const std::vector<int16_t>& x,
                           const std::string& vcd_path) {
  validate(lanes, pipeline_depth, mac_trees, beats_per_cycle, K, N, W, x);
  GemvJob job;
  job.lanes = lanes;
  job.mac_trees = mac_trees;
  job.beats_per_cycle = beats_per_cycle;
  job.K = K;
  job.N = N;
  job.W = &W;
  job.x = &x;
  // Watchdog: twice what the stream alone needs, plus the pipeline and some slack.
  double beats = std::ceil(static_cast<double>(N) / mac_trees) * std::ceil(static_cast<double>(K) / lanes);
  job.max_cycles = static_cast<uint64_t>(2 * (std::ceil(beats / beats_per_cycle) + pipeline_depth) + 100);
#define LPU_RTL_RUN(depth) \
  if (pipeline_depth == depth) return run<Vsxe_mac_tree_d##depth>(job, pipeline_depth, vcd_path);
  LPU_RTL_VARIANTS(LPU_RTL_RUN)
#undef LPU_RTL_RUN
  throw InternalError(strcat("run_gemv_rtl: depth ", pipeline_depth, " passed validation but has no variant"));
}

}  // namespace lpu::rtl
