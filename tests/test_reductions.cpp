// The reduction types prod, argmax and var through every layer that gives them meaning: the
// shared accumulator, the loop-IR printer and interpreter, the LPU code generator, the
// assembly text and the VXE model. (The C++ source handler's side is in test_handlers.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/lpu_codegen.h"
#include "config/arch_config.h"
#include "handlers/interpreter.h"
#include "isa/program.h"
#include "ops/reduction.h"
#include "schedule/schedule.h"
#include "simulator.h"
#include "test_programs.h"

using namespace lpu;

namespace {
double reduce_all(ReductionType t, const std::vector<double>& xs) {
  Reducer r(t);
  for (double x : xs) r.add(x);
  return r.result();
}
}  // namespace

TEST(Reductions, AccumulatorHandValues) {
  EXPECT_EQ(reduce_all(ReductionType::prod, {2, -3, 0.5}), -3.0);
  EXPECT_EQ(reduce_all(ReductionType::prod, {}), 1.0);
  EXPECT_EQ(reduce_all(ReductionType::argmax, {1, 5, 5, 2}), 1.0);      // first maximum
  EXPECT_EQ(reduce_all(ReductionType::argmax, {-INFINITY, -INFINITY}), 0.0);
  EXPECT_EQ(reduce_all(ReductionType::argmax, {1, NAN, 7, NAN}), 1.0);   // the first NaN wins
  EXPECT_DOUBLE_EQ(reduce_all(ReductionType::var, {1, 2, 3, 4}), 1.25);  // population variance
  EXPECT_EQ(reduce_all(ReductionType::var, {7}), 0.0);
  EXPECT_TRUE(std::isnan(reduce_all(ReductionType::var, {})));
  EXPECT_DOUBLE_EQ(reduce_all(ReductionType::mean, {1, 2, 3, 4}), 2.5);
  EXPECT_EQ(reduce_all(ReductionType::max, {1, NAN, 3}), 3.0);           // max/min skip NaN
}

// Welford's update keeps the variance of values far from zero; E[x^2] - E[x]^2 in double
// would return garbage here (x^2 ~ 1e16, spacing of doubles there ~ 2).
TEST(Reductions, VarianceIsStableFarFromZero) {
  EXPECT_NEAR(reduce_all(ReductionType::var, {1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4}), 1.25, 1e-6);
}

TEST(Reductions, NamesParseBack) {
  for (ReductionType t : {ReductionType::sum, ReductionType::max, ReductionType::min, ReductionType::mean,
                          ReductionType::prod, ReductionType::argmax, ReductionType::var}) {
    ReductionType back = ReductionType::sum;
    ASSERT_TRUE(parse_reduction_type(reduction_type_name(t), back)) << reduction_type_name(t);
    EXPECT_EQ(back, t);
  }
  ReductionType dummy;
  EXPECT_FALSE(parse_reduction_type("elu", dummy));
}

TEST(Reductions, LoopIrPrintsTheNewTypes) {
  std::string text = print_loop_ir(testprog::reductions(3, 5));
  EXPECT_NE(text.find("p = reduction.prod [i0 < 3] over [r0 < 5] f32"), std::string::npos) << text;
  EXPECT_NE(text.find("a = reduction.argmax"), std::string::npos) << text;
  EXPECT_NE(text.find("v[i0] = var_r add(mul(load(x, 5*i0 + r0), 2.0), 1.0)"), std::string::npos) << text;
}

// The interpreter against plain loops written out in the test (two-pass variance).
TEST(Reductions, InterpreterMatchesPlainLoops) {
  const int64_t R = 4, C = 9;
  LoopProgram p = testprog::reductions(R, C);
  TensorMap in = testprog::random_inputs(p, 5);
  const auto& x = in.at("x").data;
  auto got = interpret_loop_ir(p, in);  // outputs p, a, v
  for (int64_t r = 0; r < R; ++r) {
    double prod = 1, best = -INFINITY, mean = 0;
    int64_t arg = 0;
    for (int64_t c = 0; c < C; ++c) {
      double v = x[static_cast<size_t>(r * C + c)];
      prod *= v;
      if (v > best) best = v, arg = c;
      mean += 2 * v + 1;
    }
    mean /= C;
    double var = 0;
    for (int64_t c = 0; c < C; ++c) {
      double d = 2.0 * x[static_cast<size_t>(r * C + c)] + 1 - mean;
      var += d * d;
    }
    var /= C;
    auto at = [&](size_t out) { return got[out].data[static_cast<size_t>(r)]; };
    EXPECT_NEAR(at(0), prod, 1e-6 * std::fabs(prod) + 1e-12) << "row " << r;
    EXPECT_EQ(at(1), static_cast<float>(arg)) << "row " << r;
    EXPECT_NEAR(at(2), var, 1e-5) << "row " << r;
  }
}

// Generated LPU code (vxe.rprod / vxe.rargmax / vxe.rvar), printed and parsed back, then run
// on the VXE model in functional mode, equals the interpreter; for both schedules.
TEST(Reductions, LpuProgramComputesWhatTheInterpreterDoes) {
  LoopProgram p = testprog::reductions(37, 50);
  TensorMap in = testprog::random_inputs(p, 9);
  auto want = interpret_loop_ir(p, in);
  ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  for (const std::string policy : {"none", "greedy"}) {
    ScheduleOptions so;
    so.policy = policy;
    Schedule s = schedule_program(p, so);
    CodegenOptions co;
    co.lmu_bytes = 16 * 1024;  // several tiles
    Program prog = generate_lpu_program(p, s, co).program;
    std::string text = print_program(prog);
    for (const char* op : {"vxe.rprod", "vxe.rargmax", "vxe.rvar"}) EXPECT_NE(text.find(op), std::string::npos) << op;
    Program parsed = parse_program(text, "reductions.s");
    ASSERT_EQ(parsed.code.size(), prog.code.size());
    for (size_t i = 0; i < prog.code.size(); ++i) ASSERT_TRUE(parsed.code[i].same_as(prog.code[i]));
    SimOptions opts;
    opts.functional = true;
    SimResult r = simulate(parsed, arch, opts, &in);
    for (size_t o = 0; o < p.outputs.size(); ++o) {
      Comparison c = compare_tensors(r.outputs.at(p.outputs[o]), want[o]);
      EXPECT_LT(c.max_abs_error, 1e-6) << policy << " " << p.outputs[o];
    }
  }
}

// Every reduction has a default VXE timing, so a new type cannot silently run at the
// unknown-op fallback.
TEST(Reductions, EveryTypeHasADefaultTiming) {
  ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  for (const char* k : {"rsum", "rmax", "rmin", "rmean", "rprod", "rargmax", "rvar"})
    EXPECT_TRUE(arch.vxe.ops.count(k)) << k;
}
