#include <gtest/gtest.h>

#include "handlers/interpreter.h"
#include "loopir/loop_ir.h"
#include "passes/passes.h"
#include "ref/reference.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

Graph norm_graph() {
  Graph g("norm");
  NodeId x = g.add_placeholder("x", f32({4, 8}));
  NodeId w = g.add_parameter("w", f32({8}));
  NodeId m = g.add_call("mean", {x}, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}}, "m");
  NodeId c = g.add_call("sub", {x, m}, {}, "c");
  g.set_output({g.add_call("mul", {c, w}, {}, "y")});
  return g;
}
}  // namespace

// Golden text of the loop IR: a reduction over r0 and broadcasting loads.
TEST(LoopIR, PrintsGolden) {
  LoopProgram p = lower_to_loop_ir(norm_graph());
  EXPECT_EQ(print_loop_ir(p),
            "loop_ir norm\n"
            "buffers:\n"
            "  x: f32[4, 8] input\n"
            "  w: f32[8] weight\n"
            "  m: f32[4, 1] intermediate\n"
            "  c: f32[4, 8] intermediate\n"
            "  y: f32[4, 8] output\n"
            "nodes:\n"
            "m = reduction.mean [i0 < 4] over [r0 < 8] f32\n"
            "  m[i0] = mean_r load(x, 8*i0 + r0)\n"
            "c = pointwise [i0 < 4, i1 < 8] f32\n"
            "  c[8*i0 + i1] = sub(load(x, 8*i0 + i1), load(m, i0))\n"
            "y = pointwise [i0 < 4, i1 < 8] f32\n"
            "  y[8*i0 + i1] = mul(load(c, 8*i0 + i1), load(w, i1))\n");
}

TEST(LoopIR, AccessPatternsInRowColumnView) {
  LoopProgram p = lower_to_loop_ir(norm_graph());
  const LoopNode& c = p.nodes[1];
  AccessPattern x = analyze_access(c, c.body->args[0]->index);
  EXPECT_TRUE(x.ok);
  EXPECT_EQ(x.row_stride, 8);
  EXPECT_EQ(x.col_stride, 1);
  AccessPattern m = analyze_access(c, c.body->args[1]->index);
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.row_stride, 1);
  EXPECT_EQ(m.col_stride, 0);  // broadcast along the row
  EXPECT_EQ(c.rows(), 4);
  EXPECT_EQ(c.cols(), 8);
}

// The interpreter handler computes what the reference executor computes, on every built-in
// microbenchmark (same tolerance as the graph tests: 1e-5 absolute).
TEST(LoopIR, InterpreterMatchesReferenceOnBuiltins) {
  for (const auto& b : model_builders()) {
    WorkloadSpec w;
    w.name = b.name;
    w.model = b.name;
    w.seq_len = 6;
    for (const auto& [k, v] : b.params) w.params[k] = 32;
    Graph core = run_passes(build_graph(w), default_passes());
    LoopProgram p = lower_to_loop_ir(core);
    TensorMap in = make_random_inputs(core, 11);
    auto want = run_reference(core, in);
    auto got = interpret_loop_ir(p, in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      auto c = compare_tensors(got[i], want[i]);
      EXPECT_LT(c.max_abs_error, 1e-5) << b.name;
    }
  }
}

// matmul is lowered to the matrix engine by a later step; until then the error names the node.
TEST(LoopIR, OpWithoutLoweringNamesTheNode) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({2, 4}));
  NodeId b = g.add_parameter("b", f32({4, 3}));
  g.set_output({g.add_call("matmul", {a, b}, {}, "mm")});
  try {
    lower_to_loop_ir(g);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("%mm"), std::string::npos);
  }
}
