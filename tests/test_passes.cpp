#include <gtest/gtest.h>

#include <cmath>

#include "graph/ops.h"
#include "passes/passes.h"
#include "ref/reference.h"
#include "support/error.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

bool all_core(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n.kind == NodeKind::Call && !find_op(n.op)->core()) return false;
  return true;
}
}  // namespace

TEST(Decompose, LeavesOnlyCoreOps) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4, 8}));
  NodeId w = g.add_parameter("w", f32({8}));
  NodeId y = g.add_call("layer_norm", {x, w, w});
  y = g.add_call("gelu", {y}, {{"approximate", std::string("tanh")}});
  y = g.add_call("silu", {y});
  y = g.add_call("softmax", {y});
  y = g.add_call("rms_norm", {y, w});
  g.set_output({y});
  Graph core = run_passes(g, default_passes());
  EXPECT_TRUE(all_core(core));
  EXPECT_EQ(core.node(core.outputs()[0]).type, g.node(g.outputs()[0]).type);
}

// The decomposition of layer_norm and gelu against a direct computation (fp32; 1e-5).
TEST(Decompose, LayerNormGeluMatchesDirectFormula) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({3, 16}));
  NodeId w = g.add_parameter("w", f32({16}));
  NodeId b = g.add_parameter("b", f32({16}));
  NodeId y = g.add_call("gelu", {g.add_call("layer_norm", {x, w, b}, {{"eps", 1e-5}})});
  g.set_output({y});
  Graph core = run_passes(g, default_passes());
  TensorMap in = make_random_inputs(core, 3);
  Tensor got = run_reference(core, in)[0];
  const auto& X = in["x"].data;
  const auto& W = in["w"].data;
  const auto& B = in["b"].data;
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 16; ++c) mean += X[static_cast<size_t>(r * 16 + c)];
    mean /= 16;
    for (int c = 0; c < 16; ++c) var += std::pow(X[static_cast<size_t>(r * 16 + c)] - mean, 2);
    var /= 16;
    for (int c = 0; c < 16; ++c) {
      double n = (X[static_cast<size_t>(r * 16 + c)] - mean) / std::sqrt(var + 1e-5) * W[static_cast<size_t>(c)] + B[static_cast<size_t>(c)];
      double want = 0.5 * n * (1 + std::erf(n / std::sqrt(2.0)));
      EXPECT_NEAR(got.data[static_cast<size_t>(r * 16 + c)], want, 1e-5);
    }
  }
}

TEST(Decompose, SoftmaxRowsSumToOne) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({5, 7}));
  g.set_output({g.add_call("softmax", {x})});
  Graph core = run_passes(g, default_passes());
  Tensor t = run_reference(core, make_random_inputs(core, 1))[0];
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int c = 0; c < 7; ++c) s += t.data[static_cast<size_t>(r * 7 + c)];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(DeadCode, RemovesUnusedCalls) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4}));
  g.add_call("exp", {x}, {}, "unused");
  g.set_output({g.add_call("neg", {x})});
  Graph d = eliminate_dead_code(g);
  EXPECT_EQ(d.find("unused"), -1);
  EXPECT_NE(d.find("neg"), -1);
}

TEST(Reference, MissingInputIsAnError) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4}));
  g.set_output({g.add_call("neg", {x})});
  EXPECT_THROW(run_reference(g, {}), InputError);
}
