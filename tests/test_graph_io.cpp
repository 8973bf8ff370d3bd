// Graph interchange: the text form and the JSON form round-trip exactly, and malformed input
// is a one-line InputError naming the node.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/graph.h"
#include "graph/ops.h"
#include "passes/passes.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

// Every attribute kind, both node kinds with attrs, awkward floats and strings.
Graph awkward_graph() {
  Graph g("awkward.graph_1");
  NodeId x = g.add_placeholder("x", f32({2, 8}));
  NodeId idx = g.add_placeholder("tokens", {DType::i64, {2}});
  NodeId w = g.add_parameter("layers.0.weight", f32({8}));
  NodeId m = g.add_parameter("mask", {DType::boolean, {2, 8}});
  g.node(m).attrs = {{"constant", true}, {"splat", 0.0}};
  NodeId e = g.add_parameter("emb", f32({5, 8}));
  NodeId ln = g.add_call("layer_norm", {x, w}, {{"eps", 1e-5}}, "ln");
  NodeId c = g.add_call("full", {}, {{"value", -INFINITY}, {"shape", std::vector<int64_t>{}}});
  NodeId wh = g.add_call("where", {m, c, ln});
  NodeId gl = g.add_call("gelu", {wh}, {{"approximate", std::string("tanh")}});
  NodeId big = g.add_call("mul", {gl, g.add_call("full", {}, {{"value", 1.0e300}})});
  NodeId tiny = g.add_call("mul", {big, g.add_call("full", {}, {{"value", 0.1 + 0.2}})});
  NodeId sl = g.add_call("slice", {tiny}, {{"dim", int64_t{-1}}, {"start", int64_t{1}}, {"end", INT64_MAX}, {"step", int64_t{2}}});
  NodeId emb = g.add_call("embedding", {e, idx});
  NodeId r = g.add_call("reshape", {emb}, {{"shape", std::vector<int64_t>{2, 2, 4}}});
  g.set_output({sl, r, sl});
  return g;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(TextForm, RoundTripsExactly) {
  Graph g = awkward_graph();
  std::string text = print_graph(g);
  Graph back = parse_graph(text);
  EXPECT_EQ(print_graph(back), text);
  // Attribute types survive (an integer stays an integer, 0.0 stays a float).
  EXPECT_TRUE(std::holds_alternative<double>(back.node(back.find("mask")).attrs.at("splat")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(back.node(back.find("slice")).attrs.at("step")));
  EXPECT_EQ(back.node(back.find("full_2")).attrs.at("value"), AttrValue(0.1 + 0.2));
}

TEST(TextForm, RoundTripsBuiltinWorkloadsAndTheirCoreGraphs) {
  for (const auto& b : model_builders()) {
    WorkloadSpec w;
    w.name = b.name;
    w.model = b.name;
    w.seq_len = 3;
    Graph g = build_graph(w);
    for (const Graph& h : {g, run_passes(g, default_passes())}) {
      std::string text = print_graph(h);
      EXPECT_EQ(print_graph(parse_graph(text)), text) << b.name;
    }
  }
}

TEST(TextForm, StringsWithQuotesAndNewlinesAreEscaped) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({2}));
  g.node(x).attrs = {{"note", std::string("say \"hi\"\\\n\tnow")}};
  g.set_output({g.add_call("neg", {x})});
  std::string text = print_graph(g);
  EXPECT_NE(text.find(R"(note = "say \"hi\"\\\n\tnow")"), std::string::npos) << text;
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(TextForm, AcceptsCommentsAndBlankLines) {
  Graph g = parse_graph(
      "# a hand-written graph\n"
      "graph tiny {\n"
      "\n"
      "  %x: f32[4] = placeholder\n"
      "  # the only op\n"
      "  %y: f32[4] = exp(%x)\n"
      "  output(%y)\n"
      "}\n");
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.node(g.outputs()[0]).op, "exp");
}

TEST(TextForm, MalformedInputNamesLineAndNode) {
  auto parse = [](const std::string& body) {
    return error_of([&] { parse_graph("graph g {\n  %x: f32[4] = placeholder\n" + body + "}\n", "g.txt"); });
  };
  EXPECT_NE(parse("  %y: f32[4] = frob(%x)\n  output(%y)\n").find("node %y: unknown op 'frob'"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[5] = exp(%x)\n  output(%y)\n").find("node %y (exp): declared type f32[5]"),
            std::string::npos);
  std::string dangling = parse("  %y: f32[4] = exp(%z)\n  output(%y)\n");
  EXPECT_NE(dangling.find("g.txt:3: node %y: input %z is not defined"), std::string::npos) << dangling;
  std::string cycle = parse("  %y: f32[4] = add(%x, %z)\n  %z: f32[4] = exp(%y)\n  output(%z)\n");
  EXPECT_NE(cycle.find("g.txt:3: node %y: input %z"), std::string::npos) << cycle;
  EXPECT_NE(parse("  %x: f32[4] = exp(%x)\n  output(%x)\n").find("defined twice"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[4] = exp(%x) {a = 1, a = 2}\n  output(%y)\n").find("given twice"), std::string::npos);
  EXPECT_NE(parse("  %y: q8[4] = exp(%x)\n").find("g.txt:3: unknown dtype 'q8'"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[4] = exp(%x)\n").find("has no output node"), std::string::npos);
  EXPECT_NE(error_of([] { parse_graph("graph g {\n"); }).find("missing closing"), std::string::npos);
  // Every message is one line.
  EXPECT_EQ(cycle.find('\n'), std::string::npos);
}
