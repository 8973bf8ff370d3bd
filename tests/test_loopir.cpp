#include <gtest/gtest.h>

#include "handlers/interpreter.h"
#include "loopir/loop_ir.h"
#include "passes/passes.h"
#include "ref/reference.h"
#include "support/error.h"
#include "workload/transformer.h"
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
            "inputs: [x, w]\n"
            "outputs: [y]\n"
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

// A permuted-then-merged view (two heads of 4 columns, 16 elements apart) splits its column
// variable with floordiv/mod: two strided levels, the split found from either atom.
TEST(LoopIR, AccessPatternsWithTwoLevelColumns) {
  LoopNode c;
  c.kind = LoopKind::Pointwise;
  c.ranges = {4, 8};
  const Index i0 = Index::var(LoopVar::output(0)), i1 = Index::var(LoopVar::output(1));
  AccessPattern heads = analyze_access(c, i0 * 4 + i1.floordiv(4) * 16 + i1.mod(4));
  ASSERT_TRUE(heads.ok) << heads.why_not;
  EXPECT_EQ(heads.col_split, 4);
  EXPECT_EQ(heads.col_outer_stride, 16);
  EXPECT_EQ(heads.col_stride, 1);
  EXPECT_EQ(heads.row_stride, 4);
  AccessPattern mod_only = analyze_access(c, i0 * 100 + i1.mod(4) * 2);
  ASSERT_TRUE(mod_only.ok) << mod_only.why_not;
  EXPECT_EQ(mod_only.col_split, 4);
  EXPECT_EQ(mod_only.col_outer_stride, 0);
  EXPECT_EQ(mod_only.col_stride, 2);
  AccessPattern mixed = analyze_access(c, (i0 + i1).floordiv(4));
  EXPECT_FALSE(mixed.ok);
  EXPECT_EQ(mixed.why_not, "index (i0 + i1)//4 splits a column with floordiv/mod");
}

// The interpreter handler computes what the reference executor computes, on every built-in
// microbenchmark (same tolerance as the graph tests: 1e-5 absolute).
TEST(LoopIR, InterpreterMatchesReferenceOnBuiltins) {
  for (const auto& b : model_builders()) {
    const TransformerShape* ts = find_transformer(b.name);
    if (ts && ts->name.rfind("tiny", 0) != 0) continue;  // full-size LLMs: covered in timing tests
    if (ts && ts->experts > 0) continue;  // a mixture's top-k iota is a host op: the interpreter runs none
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

// A linear layer lowers to a Matmul node: a sum over r0 of A * B through the views.
TEST(LoopIR, MatmulThroughTransposeView) {
  Graph g("lin");
  NodeId a = g.add_placeholder("a", f32({2, 4}));
  NodeId w = g.add_parameter("w", f32({3, 4}));
  NodeId wt = g.add_call("permute", {w}, {{"dims", std::vector<int64_t>{1, 0}}}, "wT");
  g.set_output({g.add_call("matmul", {a, wt}, {}, "mm")});
  LoopProgram p = lower_to_loop_ir(g);
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(print_loop_node(p.nodes[0]),
            "mm = matmul [i0 < 2, i1 < 3] over [r0 < 4] f32\n"
            "  mm[3*i0 + i1] = sum_r mul(load(a, 4*i0 + r0), load(w, 4*i1 + r0))\n");
}

// Views compose into index expressions; ranges simplify floordiv/mod away where exact.
TEST(LoopIR, ViewsBecomeIndexExpressions) {
  Graph g("views");
  NodeId x = g.add_placeholder("x", f32({6, 8}));
  NodeId r = g.add_call("reshape", {x}, {{"shape", std::vector<int64_t>{6, 2, 4}}});
  NodeId p = g.add_call("permute", {r}, {{"dims", std::vector<int64_t>{1, 0, 2}}});
  NodeId s = g.add_call("slice", {p}, {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{5}}});
  g.set_output({g.add_call("neg", {s}, {}, "y")});
  LoopProgram lp = lower_to_loop_ir(g);
  ASSERT_EQ(lp.nodes.size(), 1u);
  EXPECT_EQ(expr_str(lp.nodes[0].body), "neg(load(x, 4*i0 + 8*i1 + i2 + 8))");
  TensorMap in = make_random_inputs(g, 5);
  EXPECT_LT(compare_tensors(interpret_loop_ir(lp, in)[0], run_reference(g, in)[0]).max_abs_error, 1e-6);
}

// cat lowers to one writer per input into slices of one buffer.
TEST(LoopIR, ConcatHasOneWriterPerInput) {
  Graph g("cat");
  NodeId a = g.add_placeholder("a", f32({2, 3}));
  NodeId b = g.add_placeholder("b", f32({2, 5}));
  g.set_output({g.add_call("cat", {g.add_call("exp", {a}), b}, {{"dim", int64_t{1}}}, "c")});
  LoopProgram lp = lower_to_loop_ir(g);
  EXPECT_EQ(lp.writers("c").size(), 2u);
  TensorMap in = make_random_inputs(g, 2);
  EXPECT_LT(compare_tensors(interpret_loop_ir(lp, in)[0], run_reference(g, in)[0]).max_abs_error, 1e-6);
}

// embedding lowers to a Gather node (indirect rows), interpreted like the reference.
TEST(LoopIR, EmbeddingBecomesAGather) {
  Graph g("emb");
  NodeId w = g.add_parameter("w", f32({5, 4}));
  NodeId i = g.add_placeholder("i", {DType::i64, {3}});
  g.set_output({g.add_call("embedding", {w, i}, {}, "emb")});
  LoopProgram lp = lower_to_loop_ir(g);
  ASSERT_EQ(lp.nodes.size(), 1u);
  EXPECT_EQ(lp.nodes[0].kind, LoopKind::Gather);
  TensorMap in = make_random_inputs(g, 4);
  EXPECT_LT(compare_tensors(interpret_loop_ir(lp, in)[0], run_reference(g, in)[0]).max_abs_error, 1e-7);
}

// A graph output that is a reshape of an intermediate (all its elements, in order) is that
// buffer, with the output's shape: no copy. A strided view (a transpose) is still copied into a
// buffer of its own. Values agree with the reference either way.
TEST(LoopIR, ReshapedOutputsNeedNoCopy) {
  Graph g("outs");
  NodeId x = g.add_placeholder("x", f32({4, 8}));
  NodeId w = g.add_parameter("w", f32({8}));
  NodeId y = g.add_call("mul", {x, w}, {}, "y");
  NodeId r = g.add_call("reshape", {y}, {{"shape", std::vector<int64_t>{2, 2, 8}}}, "r");
  NodeId t = g.add_call("permute", {y}, {{"dims", std::vector<int64_t>{1, 0}}}, "t");
  g.set_output({r, t});
  Graph core = run_passes(g, default_passes());
  LoopProgram p = lower_to_loop_ir(core);
  ASSERT_EQ(p.outputs.size(), 2u);
  const Buffer& held = p.buffers.at(p.outputs[0]);
  EXPECT_EQ(held.type.shape, (Shape{2, 2, 8}));
  EXPECT_EQ(held.role, BufferRole::Output);
  EXPECT_EQ(p.outputs[0], "y") << "the reshape is held by the buffer it reshapes";
  EXPECT_EQ(p.buffers.at(p.outputs[1]).type.shape, (Shape{8, 4}));
  EXPECT_EQ(p.outputs[1], "t_out") << "the transpose is a strided view: it needs its copy";
  TensorMap in = make_random_inputs(core, 3);
  auto want = run_reference(core, in);
  auto got = interpret_loop_ir(p, in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(compare_tensors(got[i], want[i]).max_abs_error, 0.0) << i;
}
