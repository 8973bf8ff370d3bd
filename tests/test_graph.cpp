#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }
}  // namespace

TEST(Graph, PrintsReadableText) {
  Graph g("tiny");
  NodeId x = g.add_placeholder("x", f32({2, 4}));
  NodeId w = g.add_parameter("w", f32({4}));
  NodeId y = g.add_call("layer_norm", {x, w}, {{"eps", 1e-5}}, "ln");
  g.set_output({g.add_call("add", {y, x})});
  EXPECT_EQ(print_graph(g),
            "graph tiny {\n"
            "  %x: f32[2, 4] = placeholder\n"
            "  %w: f32[4] = parameter\n"
            "  %ln: f32[2, 4] = layer_norm(%x, %w) {eps = 1e-05}\n"
            "  %add: f32[2, 4] = add(%ln, %x)\n"
            "  output(%add)\n"
            "}\n");
  EXPECT_NO_THROW(g.verify());
}

TEST(Graph, BroadcastingInfersShapes) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({3, 1, 5}));
  NodeId b = g.add_placeholder("b", f32({4, 1}));
  EXPECT_EQ(g.node(g.add_call("mul", {a, b})).type.shape, (Shape{3, 4, 5}));
  NodeId r = g.add_call("sum", {a}, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}});
  EXPECT_EQ(g.node(r).type.shape, (Shape{3, 1, 1}));
}

TEST(Graph, ShapeMismatchNamesTheNode) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({3, 5}));
  NodeId b = g.add_placeholder("b", f32({4}));
  try {
    g.add_call("add", {a, b}, {}, "bad_add");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("%bad_add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
}

TEST(Graph, UnknownOpNamesOpAndNode) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({3}));
  try {
    g.add_call("frobnicate", {a}, {}, "f");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("frobnicate"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("%f"), std::string::npos);
  }
}

TEST(Graph, DanglingInputIsRejected) {
  Graph g;
  g.add_placeholder("a", f32({3}));
  EXPECT_THROW(g.add_call("neg", {7}), InputError);
}

TEST(Graph, VerifyCatchesWrongDeclaredType) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({3}));
  g.add_call_typed("neg", {a}, {}, "n", f32({4}));
  g.set_output({1});
  EXPECT_THROW(g.verify(), InputError);
}

TEST(Graph, ArityIsChecked) {
  Graph g;
  NodeId a = g.add_placeholder("a", f32({3}));
  EXPECT_THROW(g.add_call("add", {a}), InputError);
}

TEST(Graph, BuiltinWorkloadGraph) {
  WorkloadSpec w;
  w.name = "lga";
  w.model = "ln_gelu_add";
  w.seq_len = 4;
  w.params["d_model"] = 8;
  Graph g = build_graph(w);
  EXPECT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).type.shape, (Shape{4, 8}));
  EXPECT_EQ(g.placeholders().size(), 1u);
  EXPECT_EQ(g.parameters().size(), 2u);
}
