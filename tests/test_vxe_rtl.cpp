// vxe.model: rtl (issue 28): the same programs with the timing of exp, div and reciprocal from
// the verilated special-function pipelines inside the device simulation, against the closed
// form (vxe.model: approx). The pipelines' own checks are in test_rtl_vxe.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "isa/program.h"
#include "jobs/jobs.h"
#include "simulator.h"
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

// Fused chains (docs/isa.md): vxe.sub.exp => rsum runs its post op on the exp pipeline, fed what
// sub computes (the pipeline checks its fixed-point results inside the run), vxe.add.reciprocal
// on the div pipeline, vxe.exp.neg its op on the exp pipeline. The cycles are the pipeline's
// plus the other stages' latencies, equal to the closed form of the one pass (every preset's
// pipeline stage is the chain's slowest); the values are the fp32 model's. A chain whose op and
// post op both run on a pipeline (vxe.div.exp) is refused under rtl, naming the line.
TEST(VxeRtlInDevice, ChainsRunTheirPipelineStage) {
  const std::string head =
      ".program chain\n.buffer x hbm:0x0 f32[7, 100] input\n.buffer m hbm:0x1000 f32[7, 1] input\n"
      ".buffer y hbm:0x2000 f32[7, 100] output\n.buffer s hbm:0x3000 f32[7, 1] output\n"
      ".buffer z hbm:0x4000 f32[7, 100] output\n.kernel 0 k\n"
      "dma.load f32 [7, 100] lm:0x0 <- hbm:0x0 [100, 1]\n"
      "dma.load f32 [7, 1] lm:0x1000 <- hbm:0x1000 [1, 1]\n";
  const Program p =
      parse_program(head +
                        "vxe.sub.exp [7, 100] lm:0x2000 <- lm:0x0 [100, 1], lm:0x1000 [1, 0] => rsum lm:0x3000\n"
                        "vxe.add.reciprocal [7, 1] lm:0x3100 <- lm:0x3000 [1, 1], #1\n"
                        "vxe.exp.neg [7, 100] lm:0x4000 <- lm:0x0 [100, 1]\n"
                        "dma.store f32 [7, 100] hbm:0x2000 [100, 1] <- lm:0x2000\n"
                        "dma.store f32 [7, 1] hbm:0x3000 [1, 1] <- lm:0x3100\n"
                        "dma.store f32 [7, 100] hbm:0x4000 [100, 1] <- lm:0x4000\nhalt\n",
                    "chain.s");
  TensorMap in;
  in["x"] = Tensor(p.find_buffer("x")->type);
  in["m"] = Tensor(p.find_buffer("m")->type);
  for (size_t k = 0; k < in["x"].data.size(); ++k) in["x"].data[k] = static_cast<float>(std::sin(0.1 * k) * 4.0);
  for (size_t k = 0; k < in["m"].data.size(); ++k) in["m"].data[k] = 1.0f + 0.25f * static_cast<float>(k);
  for (const std::string& preset : kPresets) {
    auto sim = [&](const std::string& model, bool functional) {
      SimOptions o;
      o.functional = functional;
      return simulate(p, load_arch_config(config(preset), {"vxe.model=" + model}), o, functional ? &in : nullptr);
    };
    const SimResult approx = sim("approx", false), rtl = sim("rtl", false);
    EXPECT_EQ(rtl.stats.cycles, approx.stats.cycles) << preset;
    EXPECT_EQ(rtl.stats.vxe_rtl_instructions, 3u) << preset;
    const SimResult fa = sim("approx", true), fr = sim("rtl", true);
    EXPECT_EQ(fr.stats.cycles, fa.stats.cycles) << preset;
    for (const char* out : {"y", "s", "z"}) EXPECT_EQ(fr.outputs.at(out).data, fa.outputs.at(out).data) << out;
  }
  try {
    simulate(
        parse_program(head + "vxe.div.exp [7, 100] lm:0x2000 <- lm:0x0 [100, 1], lm:0x1000 [1, 0]\nhalt\n", "div.s"),
        load_arch_config(config("lpu-small"), {"vxe.model=rtl"}), {});
    FAIL() << "vxe.div.exp ran under rtl";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(line 10): vxe.model: rtl runs one special-function pipeline per "
                                         "instruction, and this chain's div and exp both run on one"),
              std::string::npos)
        << e.what();
  }
}
