// vxe.model: rtl (issue 28): the same programs with the timing of exp, div and reciprocal from
// the verilated special-function pipelines inside the device simulation, against the closed
// form (vxe.model: approx). The pipelines' own checks are in test_rtl_vxe.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "jobs/jobs.h"
#include "support/error.h"

using namespace lpu;

namespace {

std::string config(const std::string& preset) { return std::string(LPU_SOURCE_DIR) + "/configs/" + preset + ".yaml"; }

WorkloadSpec workload(const std::string& name, const std::vector<std::string>& sets = {}) {
  return resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + name + ".yaml", sets);
}

struct Pair {
  SimStats approx, rtl;
};

Pair run_both(const WorkloadSpec& w, const std::string& preset, std::vector<std::string> sets = {}) {
  sets.push_back("vxe.model=approx");
  SimStats a = run_job(w, load_arch_config(config(preset), sets), "greedy", false).sim.stats;
  sets.back() = "vxe.model=rtl";
  SimStats r = run_job(w, load_arch_config(config(preset), sets), "greedy", false).sim.stats;
  return {a, r};
}

std::string describe(const Pair& p) { return strcat("approx ", p.approx.cycles, " rtl ", p.rtl.cycles); }

double error_pct(const Pair& p) {
  return 100.0 * (static_cast<double>(p.approx.cycles) - static_cast<double>(p.rtl.cycles)) /
         static_cast<double>(p.rtl.cycles);
}

const std::vector<std::string> kPresets = {"lpu-small", "lpu-fpga-u55c", "lpu-asic", "lpu-lpddr"};

}  // namespace

// The acceptance check: softmax microbenchmarks (exp and the reciprocal of the row sum) of
// several shapes and both dtypes on every preset, whole-program cycles within 1%. The closed
// form is exact for this pipeline (test_rtl_vxe), so the cycles are in fact equal: any
// difference is a bug in the in-device driver or in the closed form.
TEST(VxeRtlInDevice, SoftmaxCyclesWithinOnePercentOnEveryPreset) {
  struct Shape {
    int64_t rows, cols;
    const char* dtype;
  };
  const std::vector<Shape> shapes = {{128, 1024, "f32"}, {7, 100, "f32"}, {1, 2049, "f16"}, {33, 77, "f16"}};
  for (const std::string& preset : kPresets)
    for (const Shape& s : shapes) {
      Pair p = run_both(
          workload("softmax", {strcat("seq_len=", s.rows), strcat("cols=", s.cols), strcat("dtype=", s.dtype)}),
          preset);
      const std::string what = strcat(preset, " softmax ", s.rows, "x", s.cols, " ", s.dtype, ": ", describe(p));
      EXPECT_LT(std::abs(error_pct(p)), 1.0) << what;
      EXPECT_EQ(p.rtl.cycles, p.approx.cycles) << what;
      EXPECT_GT(p.rtl.vxe_rtl_instructions, 0u) << what;  // the RTL ran: the closed form did not stand in
      EXPECT_GE(p.rtl.vxe_rtl_elements, static_cast<uint64_t>(s.rows * s.cols)) << what;
      EXPECT_EQ(p.approx.vxe_rtl_instructions, 0u);
    }
}

// Whole decode steps: every exp and reciprocal of a layer's attention through the RTL, on
// every preset as it is (its lanes and clock; lpu-fpga-u55c's 4545.45 ps period is not a whole
// number of picoseconds).
TEST(VxeRtlInDevice, DecodeStepsEqualTheClosedFormOnEveryPreset) {
  for (const std::string& preset : kPresets) {
    Pair p = run_both(workload("tiny-opt-decode"), preset);
    EXPECT_EQ(p.rtl.cycles, p.approx.cycles) << preset << ": " << describe(p);
    EXPECT_GT(p.rtl.vxe_rtl_instructions, 0u) << preset;
  }
  Pair opt = run_both(workload("opt-1.3b-decode"), "lpu-asic");
  EXPECT_EQ(opt.rtl.cycles, opt.approx.cycles) << describe(opt);
  // 24 layers x 2 tiles of 16 heads x (2 row groups of 8 heads x (exp of the cached scores, exp
  // of the new one) + the reciprocal of the row sum), as compiled today (codegen/tile_skew.h).
  EXPECT_EQ(opt.rtl.vxe_rtl_instructions, 240u);
}

// Values come from the fp32 model; the pipelines get the real operands in their fixed-point
// formats and check every result against the C++ reference inside the run (InternalError on a
// mismatch), with the SXE's RTL tree in the loop too.
TEST(VxeRtlInDevice, FunctionalRunsMatchTheReference) {
  for (const std::string& preset : {std::string("lpu-small"), std::string("lpu-asic")}) {
    RunOutcome t = run_job(workload("tiny-opt-decode"),
                           load_arch_config(config(preset), {"vxe.model=rtl", "sxe.model=rtl"}), "greedy", true);
    ASSERT_TRUE(t.check.has_value());
    EXPECT_TRUE(t.check->ok) << preset << ": " << t.check->worst;
    EXPECT_GT(t.sim.stats.vxe_rtl_instructions, 0u);
    EXPECT_GT(t.sim.stats.sxe_rtl_gemms, 0u);
  }
  RunOutcome s = run_job(workload("softmax", {"seq_len=5", "cols=300"}),
                         load_arch_config(config("lpu-fpga-u55c"), {"vxe.model=rtl"}), "greedy", true);
  ASSERT_TRUE(s.check.has_value());
  EXPECT_TRUE(s.check->ok) << s.check->worst;
}

TEST(VxeRtlInDevice, ConfigurationsWithoutAVerilatedPipelineAreInputErrors) {
  const WorkloadSpec w = workload("softmax", {"seq_len=2", "cols=64"});
  auto message = [&](std::vector<std::string> sets) {
    try {
      run_job(w, load_arch_config(config("lpu-small"), sets), "greedy", false);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  EXPECT_NE(message({"vxe.model=rtl", "vxe.ops.exp.latency=15"}).find("LPU_SFU_VARIANTS"), std::string::npos);
  EXPECT_NE(message({"vxe.model=rtl", "vxe.ops.div.ii=2"}).find("reciprocal"), std::string::npos);
  EXPECT_NE(message({"vxe.model=rtl", "vxe.lanes=256"}).find("vxe.lanes = 256"), std::string::npos);
  EXPECT_NE(message({"vxe.model=verilog"}).find("expected approx or rtl"), std::string::npos);
  // The closed form has no such limits.
  EXPECT_EQ(message({"vxe.model=approx", "vxe.ops.exp.latency=15"}), "no InputError");
}
