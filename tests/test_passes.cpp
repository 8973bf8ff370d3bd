#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "graph/ops.h"
#include "graph/aten.h"
#include "passes/decompose.h"
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

// ---------------------------------------------------------------------------------------------
// ATen ops, CSE, constant folding

namespace {
size_t count_op(const Graph& g, const std::string& op) {
  size_t k = 0;
  for (const auto& n : g.nodes()) k += n.kind == NodeKind::Call && n.op == op;
  return k;
}
}  // namespace

TEST(AtenOps, EveryAtenOpHasExactlyOneDecomposition) {
  std::set<std::string> registered;
  for (const auto& op : all_ops())
    if (op.name.rfind("aten.", 0) == 0 && !op.host()) {  // host ops (ref/host_ops.cpp) stay as they are
      registered.insert(op.name);
      EXPECT_EQ(op.category, OpCategory::Composite) << op.name;
    }
  Graph g;
  NodeId x = g.add_placeholder("x", f32({2}));
  for (const auto& name : registered) {
    Node n;
    n.name = "n";
    n.op = name;
    n.inputs = {x};
    // An op without a table entry is an InputError naming it; with one, anything else.
    try {
      Graph out;
      out.add_placeholder("x", f32({2}));
      expand_node(out, n, {0});
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find("has no decomposition"), std::string::npos) << name << ": " << e.what();
    } catch (const std::exception&) {
    }
  }
  EXPECT_GT(registered.size(), 60u);
  EXPECT_EQ(registered.size(), aten_decompositions().size());
  for (const auto& [name, f] : aten_decompositions()) EXPECT_TRUE(registered.count(name)) << name;
}

TEST(AtenOps, TypePromotionFollowsAten) {
  auto t = [](DType d, Shape s) { return aten::OperandType{true, {d, std::move(s)}}; };
  auto num = [](DType d) { return aten::OperandType{false, {d, {}}}; };
  using aten::result_type;
  EXPECT_EQ(result_type({t(DType::f16, {3}), num(DType::f32)}), DType::f16);  // half * 0.5 stays half
  EXPECT_EQ(result_type({t(DType::i64, {3}), num(DType::f32)}), DType::f32);  // long * 0.5 -> float
  EXPECT_EQ(result_type({t(DType::i32, {3}), num(DType::i64)}), DType::i32);  // int * 2 stays int
  EXPECT_EQ(result_type({t(DType::boolean, {3}), num(DType::i64)}), DType::i64);
  EXPECT_EQ(result_type({t(DType::f16, {3}), t(DType::f32, {})}), DType::f16);  // zero-dim ranks lower
  EXPECT_EQ(result_type({t(DType::i64, {3}), t(DType::f16, {})}), DType::f16);  // ...unless of a higher category
  EXPECT_EQ(result_type({t(DType::f16, {3}), t(DType::bf16, {3})}), DType::f32);
  EXPECT_EQ(result_type({t(DType::i32, {3}), t(DType::i64, {3})}), DType::i64);
}

TEST(AtenOps, InferenceErrorsNameTheNode) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({2, 6}));
  NodeId i = g.add_placeholder("i", {DType::i64, {2, 6}});
  auto err = [&](const std::string& op, std::vector<NodeId> in, Attrs a) {
    try {
      g.add_call(op, in, a, "bad");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(err("aten.view", {x}, {{"size", std::vector<int64_t>{5, -1}}}).find("%bad (aten.view): size [5, -1] is invalid for 12"), std::string::npos);
  EXPECT_NE(err("aten.split", {x}, {{"split_size", int64_t{4}}, {"dim", int64_t{1}}, {"result", int64_t{2}}}).find("result 2 out of range"), std::string::npos);
  EXPECT_NE(err("aten.relu", {x}, {{"result", int64_t{1}}}).find("single result"), std::string::npos);
  EXPECT_NE(err("aten.mean", {i}, {}).find("floating"), std::string::npos);
  EXPECT_NE(err("aten.div", {x}, {{"other", 2.0}, {"rounding_mode", std::string("ceil")}}).find("rounding_mode \"ceil\" is not one of"), std::string::npos);
  EXPECT_NE(err("aten.native_layer_norm", {x}, {{"normalized_shape", std::vector<int64_t>{2}}, {"eps", 1e-5}}).find("not a suffix"), std::string::npos);
  EXPECT_NE(err("aten.add", {x}, {}).find("argument 'other' is neither an input nor an attribute"), std::string::npos);
  EXPECT_NE(err("aten.dropout", {x}, {{"p", 0.1}, {"train", true}}).find("eval mode"), std::string::npos);
  // Types come out as PyTorch computes them.
  EXPECT_EQ(g.node(g.add_call("aten.mul", {i}, {{"other", 0.5}})).type.dtype, DType::f32);
  EXPECT_EQ(g.node(g.add_call("aten.sum", {i}, {{"dim", std::vector<int64_t>{-1}}})).type, (TensorType{DType::i64, {2}}));
  EXPECT_EQ(g.node(g.add_call("aten.native_layer_norm", {x}, {{"normalized_shape", std::vector<int64_t>{6}}, {"eps", 1e-5}, {"result", int64_t{2}}})).type, f32({2, 1}));
}

// aten ops through decomposition on data: torch results computed by hand.
TEST(AtenOps, DecompositionsComputeTorchResults) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({2, 3}));
  NodeId v = g.add_placeholder("v", f32({3}));
  NodeId b2 = g.add_placeholder("b2", f32({2}));
  NodeId xt = g.add_call("aten.t", {x});
  std::vector<NodeId> outs = {
      g.add_call("aten.addmm", {b2, x, xt}, {{"beta", 0.5}, {"alpha", int64_t{2}}}),
      g.add_call("aten.var", {x}, {{"dim", std::vector<int64_t>{1}}, {"correction", int64_t{1}}}),
      g.add_call("aten.matmul", {x, v}),   // [2, 3] x [3] -> [2]
      g.add_call("aten.matmul", {v, xt}),  // [3] x [3, 2] -> [2]
      g.add_call("aten.split_with_sizes", {x}, {{"split_sizes", std::vector<int64_t>{1, 2}}, {"dim", int64_t{1}}, {"result", int64_t{1}}}),
      g.add_call("aten.unbind", {x}, {{"result", int64_t{1}}}),
      g.add_call("aten.select", {x}, {{"dim", int64_t{1}}, {"index", int64_t{-1}}}),
      g.add_call("aten.rsub", {x}, {{"other", 1.0}, {"alpha", 2.0}}),
      g.add_call("aten.pow", {x}, {{"exponent", int64_t{2}}}),
      g.add_call("aten.masked_fill", {x, g.add_call("aten.gt", {x}, {{"other", int64_t{2}}})}, {{"value", -INFINITY}}),
  };
  g.set_output(outs);
  Graph core = run_passes(g, default_passes());
  EXPECT_TRUE(all_core(core));
  Tensor tx(f32({2, 3})), tv(f32({3})), tb(f32({2}));
  tx.data = {0, 1, 2, 3, 4, 5};
  tv.data = {1, -1, 2};
  tb.data = {1, -1};
  auto r = run_reference(core, {{"x", tx}, {"v", tv}, {"b2", tb}});
  const float inf = INFINITY;
  std::vector<std::vector<float>> want = {
      {10.5f, 27.5f, 28.5f, 99.5f},  // 0.5 * b2 + 2 * x @ x^T
      {1, 1},
      {3, 9},
      {3, 9},
      {1, 2, 4, 5},
      {3, 4, 5},
      {2, 5},
      {1, -1, -3, -5, -7, -9},
      {0, 1, 4, 9, 16, 25},
      {0, 1, 2, -inf, -inf, -inf},
  };
  ASSERT_EQ(r.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r[i].type, g.node(outs[i]).type) << i;
    EXPECT_EQ(r[i].data, want[i]) << "output " << i << " (" << g.node(outs[i]).op << ")";
  }
  // pow(x, 2) became mul(x, x); the scalar constants were shared by CSE.
  EXPECT_EQ(count_op(core, "pow"), 0u);
}

TEST(Cse, MergesRepeatedComputationsAndConstants) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4, 8}));
  // Two native_layer_norm results share their mean; two identical exps become one.
  Attrs ln{{"normalized_shape", std::vector<int64_t>{8}}, {"eps", 1e-5}};
  NodeId y = g.add_call("aten.native_layer_norm", {x}, ln);
  Attrs ln1 = ln;
  ln1["result"] = int64_t{1};
  NodeId m = g.add_call("aten.native_layer_norm", {x}, ln1);
  NodeId e1 = g.add_call("exp", {x});
  NodeId e2 = g.add_call("exp", {x});
  g.set_output({g.add_call("add", {y, m}), g.add_call("sub", {e1, e2})});
  Graph d = run_passes(g, {{"decompose", decompose}});
  Graph c = eliminate_dead_code(eliminate_common_subexpressions(d));
  EXPECT_EQ(count_op(d, "mean"), 3u);  // mean for result 0, its variance, mean for result 1
  EXPECT_EQ(count_op(c, "mean"), 2u);
  EXPECT_EQ(count_op(c, "exp"), 1u);
  TensorMap in = make_random_inputs(g, 5);
  auto a = run_reference(d, in), b = run_reference(c, in);
  EXPECT_EQ(a[0].data, b[0].data);
  EXPECT_EQ(a[1].data, b[1].data);
}

TEST(FoldConstants, FoldsSplatsWithoutTouchingOutputs) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4, 4}));
  NodeId scale = g.add_parameter("scale", f32({4, 4}));
  g.node(scale).attrs = {{"constant", true}, {"splat", 0.25}};
  // ((2 + 1) * scale) summed over a dim: a splat all the way through.
  NodeId three = g.add_call("add", {g.add_call("full", {}, {{"value", 2.0}}), g.add_call("full", {}, {{"value", 1.0}})});
  NodeId s = g.add_call("sum", {g.add_call("mul", {three, scale})}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}});
  NodeId y = g.add_call("mul", {x, s}, {}, "y");
  NodeId one = g.add_call("mul", {x, g.add_call("full", {}, {{"value", 1.0}})}, {}, "times_one");
  NodeId out_const = g.add_call("neg", {g.add_call("full", {}, {{"value", 3.0}, {"shape", std::vector<int64_t>{4}}})}, {}, "negc");
  g.set_output({y, one, out_const});
  Graph f = run_passes(g, default_passes());
  // scale became a constant 3.0 (= 4 * 0.75), so y is x * full(3.0); x * 1 is x itself...
  EXPECT_EQ(f.parameters().size(), 0u);
  const Node& yn = f.node(f.outputs()[0]);
  ASSERT_EQ(yn.op, "mul");
  EXPECT_EQ(f.node(yn.inputs[1]).op, "full");
  EXPECT_EQ(f.node(yn.inputs[1]).attr_float("value", 0), 3.0);
  EXPECT_EQ(f.node(f.outputs()[1]).kind, NodeKind::Placeholder);
  // ...but an output stays computed even when its inputs are constant.
  EXPECT_EQ(f.node(f.outputs()[2]).op, "neg");
  TensorMap in = make_random_inputs(g, 2);
  std::fill(in["scale"].data.begin(), in["scale"].data.end(), 0.25f);  // what {splat = 0.25} promises
  auto a = run_reference(run_passes(g, {{"decompose", decompose}}), in), b = run_reference(f, in);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].data, b[i].data) << i;
}

TEST(Verify, ConstantOutputsAreRejected) {
  Graph g;
  g.add_placeholder("x", f32({2}));
  g.set_output({g.add_call("full", {}, {{"value", 1.0}, {"shape", std::vector<int64_t>{2}}}, "c")});
  try {
    g.verify();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("node %c: a graph output must be computed"), std::string::npos) << e.what();
  }
}

// docs/core-ops.md is the reference for the op table: every registered op appears in it.
TEST(AtenOps, EveryRegisteredOpIsDocumented) {
  std::ifstream in(std::string(LPU_SOURCE_DIR) + "/docs/core-ops.md");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  ASSERT_FALSE(doc.empty());
  for (const auto& op : all_ops()) {
    // ATen ops are written `aten.x` or in a group `aten.x y z`; core ops as `name` or in a group.
    std::string bare = op.name.rfind("aten.", 0) == 0 ? op.name.substr(5) : op.name;
    bool found = doc.find("`" + op.name + "`") != std::string::npos || doc.find(" " + bare + " ") != std::string::npos ||
                 doc.find(" " + bare + "`") != std::string::npos || doc.find("`" + bare + " ") != std::string::npos ||
                 doc.find("`" + bare + "`") != std::string::npos;
    EXPECT_TRUE(found) << op.name << " is not in docs/core-ops.md";
  }
}

// ---------------------------------------------------------------------------------------------
// split_row_selects: attention over a KV cache with one position overwritten
// (where(positions == index, new row, cache)) reads the cache and the new row directly.

namespace {
// One decode step of attention, 2 query heads sharing 1 KV head (the select is expanded), the
// keys scaled on their way to the matmul (a pointwise op carrying the select).
Graph row_select_attention() {
  Graph g("attn");
  NodeId q = g.add_placeholder("q", f32({2, 1, 4}));
  NodeId kc = g.add_placeholder("k_cache", f32({1, 6, 4}));
  NodeId vc = g.add_placeholder("v_cache", f32({1, 6, 4}));
  NodeId kn = g.add_placeholder("k_new", f32({1, 1, 4}));
  NodeId vn = g.add_placeholder("v_new", f32({1, 1, 4}));
  NodeId pos = g.add_placeholder("pos", {DType::i64, {6, 1}});
  NodeId idx = g.add_placeholder("idx", {DType::i64, {1}});
  NodeId m = g.add_call("eq", {pos, idx}, {}, "m");
  NodeId k = g.add_call("where", {m, kn, kc}, {}, "k");
  NodeId v = g.add_call("where", {m, vn, vc}, {}, "v");
  NodeId kt = g.add_call("permute", {g.add_call("expand", {k}, {{"shape", Shape{2, 6, 4}}}, "k_heads")},
                         {{"dims", std::vector<int64_t>{0, 2, 1}}}, "kt");
  NodeId ks = g.add_call("mul", {kt, g.add_call("full", {}, {{"value", 0.5}}, "half")}, {}, "kt_scaled");
  NodeId s = g.add_call("matmul", {q, ks}, {}, "scores");
  NodeId o = g.add_call("matmul", {s, g.add_call("expand", {v}, {{"shape", Shape{2, 6, 4}}}, "v_heads")}, {}, "out");
  g.set_output({o});
  return g;
}

TensorMap row_select_inputs(const Graph& g, int64_t index) {
  TensorMap in = make_random_inputs(g, 7);
  for (int i = 0; i < 6; ++i) in["pos"].data[static_cast<size_t>(i)] = static_cast<float>(i);
  in["idx"].data = {static_cast<float>(index)};
  return in;
}
}  // namespace

TEST(SplitRowSelects, AttentionReadsCacheAndNewRowDirectly) {
  Graph g = row_select_attention();
  Graph r = eliminate_dead_code(split_row_selects(g));
  EXPECT_EQ(print_graph(r), R"(graph attn {
  %q: f32[2, 1, 4] = placeholder
  %k_cache: f32[1, 6, 4] = placeholder
  %v_cache: f32[1, 6, 4] = placeholder
  %k_new: f32[1, 1, 4] = placeholder
  %v_new: f32[1, 1, 4] = placeholder
  %pos: i64[6, 1] = placeholder
  %idx: i64[1] = placeholder
  %m: bool[6, 1] = eq(%pos, %idx)
  %k_heads_rows: f32[2, 1, 4] = expand(%k_new) {shape = [2, 1, 4]}
  %k_heads_cache: f32[2, 6, 4] = expand(%k_cache) {shape = [2, 6, 4]}
  %kt_rows: f32[2, 4, 1] = permute(%k_heads_rows) {dims = [0, 2, 1]}
  %kt_cache: f32[2, 4, 6] = permute(%k_heads_cache) {dims = [0, 2, 1]}
  %half: f32[] = full() {value = 0.5}
  %kt_scaled_rows: f32[2, 4, 1] = mul(%kt_rows, %half)
  %kt_scaled_cache: f32[2, 4, 6] = mul(%kt_cache, %half)
  %scores_mask: bool[1, 1, 6] = reshape(%m) {shape = [1, 1, 6]}
  %scores_rows: f32[2, 1, 1] = matmul(%q, %kt_scaled_rows)
  %scores_cache: f32[2, 1, 6] = matmul(%q, %kt_scaled_cache)
  %scores: f32[2, 1, 6] = where(%scores_mask, %scores_rows, %scores_cache)
  %v_heads_rows: f32[2, 1, 4] = expand(%v_new) {shape = [2, 1, 4]}
  %v_heads_cache: f32[2, 6, 4] = expand(%v_cache) {shape = [2, 6, 4]}
  %out_mask: bool[1, 1, 6] = reshape(%m) {shape = [1, 1, 6]}
  %out_zero: f32[] = full() {dtype = "f32", value = 0.0}
  %out_a_cache: f32[2, 1, 6] = where(%out_mask, %out_zero, %scores)
  %out_a_rows: f32[2, 1, 6] = where(%out_mask, %scores, %out_zero)
  %out_a_rows_sum: f32[2, 1, 1] = sum(%out_a_rows) {dims = [2], keepdim = true}
  %out_cache: f32[2, 1, 4] = matmul(%out_a_cache, %v_heads_cache)
  %out_rows: f32[2, 1, 4] = mul(%out_a_rows_sum, %v_heads_rows)
  %out: f32[2, 1, 4] = add(%out_cache, %out_rows)
  output(%out)
}
)");
  // The default pipeline runs it: no node of the cache's shape is computed any more.
  Graph core = run_passes(g, default_passes());
  for (const auto& n : core.nodes())
    EXPECT_FALSE(n.kind == NodeKind::Call && n.op == "where" && n.type.shape == (Shape{1, 6, 4})) << n.name;
  // Exact algebra: the same values (fp32 rounding apart) wherever the index points, or nowhere.
  for (int64_t index : {0, 3, 5, 9}) {
    TensorMap in = row_select_inputs(g, index);
    Tensor want = run_reference(g, in)[0], got = run_reference(core, in)[0];
    ASSERT_EQ(want.data.size(), got.data.size());
    for (size_t i = 0; i < want.data.size(); ++i)
      EXPECT_NEAR(got.data[i], want.data[i], 1e-5f * std::max(1.0f, std::fabs(want.data[i]))) << index << " " << i;
  }
}

TEST(SplitRowSelects, RefusesWhatIsNotARowSelectIntoMatmuls) {
  auto unchanged = [](const Graph& g) {
    EXPECT_EQ(print_graph(eliminate_dead_code(split_row_selects(g))), print_graph(eliminate_dead_code(g)));
  };
  auto base = [](Graph& g, Shape mask_shape) {
    g.add_placeholder("q", f32({1, 4}));
    NodeId c = g.add_placeholder("cache", f32({6, 4}));
    NodeId r = g.add_placeholder("row", f32({1, 4}));
    NodeId m = g.add_placeholder("m", {DType::boolean, std::move(mask_shape)});
    return g.add_call("where", {m, r, c}, {}, "sel");
  };
  {  // the select is also a graph output: it is computed anyway
    Graph g;
    NodeId s = base(g, {6, 1});
    g.set_output({g.add_call("matmul", {g.find("q"), g.add_call("permute", {s}, {{"dims", std::vector<int64_t>{1, 0}}})}), s});
    unchanged(g);
  }
  {  // the mask varies along both axes: not one row
    Graph g;
    NodeId c = g.add_placeholder("cache", f32({6, 4}));
    NodeId r = g.add_placeholder("row", f32({1, 4}));
    NodeId m = g.add_placeholder("m", {DType::boolean, {6, 4}});
    NodeId s = g.add_call("where", {m, r, c}, {}, "sel");
    g.set_output({g.add_call("matmul", {g.add_placeholder("q", f32({1, 6})), s})});
    unchanged(g);
  }
  {  // a reshape merges the selected axis with another one
    Graph g;
    NodeId s = base(g, {6, 1});
    NodeId flat = g.add_call("reshape", {s}, {{"shape", Shape{24, 1}}});
    g.set_output({g.add_call("matmul", {g.add_placeholder("x", f32({1, 24})), flat})});
    unchanged(g);
  }
  {  // the select is read along a batch axis of the matmul
    Graph g;
    NodeId s = base(g, {6, 1});
    NodeId b = g.add_call("reshape", {s}, {{"shape", Shape{6, 4, 1}}});
    g.set_output({g.add_call("matmul", {g.add_placeholder("x", f32({6, 2, 4})), b})});
    unchanged(g);
  }
  {  // A's reduced axis: splitting would move the select onto B
    Graph g;
    NodeId s = base(g, {6, 1});
    NodeId a = g.add_call("permute", {s}, {{"dims", std::vector<int64_t>{1, 0}}});
    g.set_output({g.add_call("matmul", {a, g.add_parameter("w", f32({6, 8}))})});
    unchanged(g);
  }
  {  // A's output axis, but B is larger than the select: B would be read twice
    Graph g;
    NodeId s = base(g, {6, 1});
    g.set_output({g.add_call("matmul", {s, g.add_parameter("w", f32({4, 64}))})});
    unchanged(g);
  }
}

// A's output axis with a small B (keys as A: scores transposed = K · q^T), and the rows in the
// where's false branch (an inverted mask).
TEST(SplitRowSelects, SplitsASmallOutputAxisAndAnInvertedMask) {
  Graph g("kq");
  NodeId q = g.add_placeholder("q", f32({4, 1}));
  NodeId c = g.add_placeholder("cache", f32({6, 4}));
  NodeId r = g.add_placeholder("row", f32({4}));
  NodeId pos = g.add_placeholder("pos", {DType::i64, {6, 1}});
  NodeId idx = g.add_placeholder("idx", {DType::i64, {1}});
  NodeId keep = g.add_call("ne", {pos, idx}, {}, "keep");
  NodeId s = g.add_call("where", {keep, c, r}, {}, "sel");
  g.set_output({g.add_call("matmul", {s, q}, {}, "scores")});
  Graph out = eliminate_dead_code(split_row_selects(g));
  EXPECT_EQ(print_graph(out), R"(graph kq {
  %q: f32[4, 1] = placeholder
  %cache: f32[6, 4] = placeholder
  %row: f32[4] = placeholder
  %pos: i64[6, 1] = placeholder
  %idx: i64[1] = placeholder
  %keep: bool[6, 1] = ne(%pos, %idx)
  %sel_rows: f32[1, 4] = reshape(%row) {shape = [1, 4]}
  %scores_rows: f32[1, 1] = matmul(%sel_rows, %q)
  %scores_cache: f32[6, 1] = matmul(%cache, %q)
  %scores: f32[6, 1] = where(%keep, %scores_cache, %scores_rows)
  output(%scores)
}
)");
  TensorMap in = make_random_inputs(g, 3);
  for (int i = 0; i < 6; ++i) in["pos"].data[static_cast<size_t>(i)] = static_cast<float>(i);
  in["idx"].data = {2};
  EXPECT_EQ(run_reference(g, in)[0].data, run_reference(out, in)[0].data);
}

// ---------------------------------------------------------------------------------------------
// Small-tensor layouts: HuggingFace's rotary tables, cos/sin(cat(f, f)) with f = inv_freq x
// position as a [1, 8, 1] x [1, 1, 1] bmm, and the cache-write mask eq(positions [32, 1], index),
// computed in the layout of their users so that they fuse into one kernel.

TEST(Layouts, RotaryTablesBecomeOneRowOfPointwiseOps) {
  Graph g("rope");
  NodeId inv = g.add_parameter("inv_freq", f32({8}));
  NodeId pos = g.add_placeholder("pos", f32({1, 1, 1}));
  NodeId f = g.add_call("matmul", {g.add_call("reshape", {inv}, {{"shape", Shape{1, 8, 1}}}, "inv_col"), pos}, {}, "freqs");
  NodeId ft = g.add_call("permute", {f}, {{"dims", std::vector<int64_t>{0, 2, 1}}}, "freqs_t");
  NodeId emb = g.add_call("cat", {ft, ft}, {{"dim", int64_t{-1}}}, "emb");
  g.set_output({g.add_call("cos", {emb}, {}, "cos"), g.add_call("sin", {emb}, {}, "sin")});

  Graph a = outer_product_matmuls(g);
  EXPECT_EQ(a.node(a.find("freqs")).op, "mul");
  EXPECT_EQ(a.node(a.find("freqs")).type, f32({1, 8, 1}));
  Graph b = simplify_unit_dims(a);
  EXPECT_EQ(print_graph(b), R"(graph rope {
  %inv_freq: f32[8] = parameter
  %pos: f32[1, 1, 1] = placeholder
  %inv_col: f32[1, 8, 1] = reshape(%inv_freq) {shape = [1, 8, 1]}
  %freqs_in0: f32[1, 1, 8] = reshape(%inv_col) {shape = [1, 1, 8]}
  %freqs: f32[1, 1, 8] = mul(%freqs_in0, %pos)
  %emb: f32[1, 1, 16] = cat(%freqs, %freqs) {dim = -1}
  %cos: f32[1, 1, 16] = cos(%emb)
  %sin: f32[1, 1, 16] = sin(%emb)
  output(%cos, %sin)
}
)");
  Graph c = eliminate_dead_code(eliminate_common_subexpressions(pointwise_into_cat(b)));
  EXPECT_EQ(print_graph(c), R"(graph rope {
  %inv_freq: f32[8] = parameter
  %pos: f32[1, 1, 1] = placeholder
  %inv_col: f32[1, 8, 1] = reshape(%inv_freq) {shape = [1, 8, 1]}
  %freqs_in0: f32[1, 1, 8] = reshape(%inv_col) {shape = [1, 1, 8]}
  %freqs: f32[1, 1, 8] = mul(%freqs_in0, %pos)
  %cos_cat0: f32[1, 1, 8] = cos(%freqs)
  %cos: f32[1, 1, 16] = cat(%cos_cat0, %cos_cat0) {dim = -1}
  %sin_cat0: f32[1, 1, 8] = sin(%freqs)
  %sin: f32[1, 1, 16] = cat(%sin_cat0, %sin_cat0) {dim = -1}
  output(%cos, %sin)
}
)");
  // The default pipeline does all of it; the values are PyTorch's formula.
  Graph core = run_passes(g, default_passes());
  EXPECT_EQ(print_graph(core), print_graph(c));
  TensorMap in = make_random_inputs(g, 4);
  auto want = run_reference(g, in), got = run_reference(core, in);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i].data, got[i].data) << i;
}

TEST(Layouts, ColumnsMoveOnlyIntoUnitViews) {
  // eq(positions [1, 6, 1], index) read only as [1, 1, 6]: computed as [1, 1, 6], the index
  // (one element) broadcasting as it is; a batched K = 1 matmul is a broadcast product.
  Graph g("mask");
  NodeId pos = g.add_placeholder("pos", {DType::i64, {1, 6, 1}});
  NodeId idx = g.add_placeholder("idx", {DType::i64, {1}});
  NodeId m = g.add_call("eq", {pos, idx}, {}, "m");
  NodeId x = g.add_placeholder("x", f32({2, 3, 6}));
  NodeId w = g.add_call("where", {g.add_call("reshape", {m}, {{"shape", Shape{1, 1, 6}}}, "m_row"), x,
                                  g.add_call("full", {}, {{"value", 0.0}}, "zero")}, {}, "masked");
  NodeId outer = g.add_call("matmul", {g.add_placeholder("u", f32({2, 3, 1})), g.add_placeholder("v", f32({1, 4}))}, {}, "outer");
  // A column with another user (a reduction) stays a column.
  NodeId e = g.add_call("exp", {g.add_placeholder("y", f32({5, 1}))}, {}, "e");
  g.set_output({w, outer, g.add_call("reshape", {e}, {{"shape", Shape{5}}}, "e_flat"), g.add_call("sum", {e}, {{"dims", std::vector<int64_t>{0}}})});
  Graph r = simplify_unit_dims(outer_product_matmuls(g));
  EXPECT_EQ(print_graph(r), R"(graph mask {
  %pos: i64[1, 6, 1] = placeholder
  %idx: i64[1] = placeholder
  %m_in0: i64[1, 1, 6] = reshape(%pos) {shape = [1, 1, 6]}
  %m: bool[1, 1, 6] = eq(%m_in0, %idx)
  %x: f32[2, 3, 6] = placeholder
  %zero: f32[] = full() {value = 0.0}
  %masked: f32[2, 3, 6] = where(%m, %x, %zero)
  %u: f32[2, 3, 1] = placeholder
  %v: f32[1, 4] = placeholder
  %outer: f32[2, 3, 4] = mul(%u, %v)
  %y: f32[5, 1] = placeholder
  %e: f32[5, 1] = exp(%y)
  %e_flat: f32[5] = reshape(%e) {shape = [5]}
  %sum: f32[1] = sum(%e) {dims = [0]}
  output(%masked, %outer, %e_flat, %sum)
}
)");
  TensorMap in = make_random_inputs(g, 5);
  for (int i = 0; i < 6; ++i) in["pos"].data[static_cast<size_t>(i)] = static_cast<float>(i);
  in["idx"].data = {4};
  auto want = run_reference(g, in), got = run_reference(r, in);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i].data, got[i].data) << i;
}

// A unary op of a cat that can run in its user's kernel (as many rows) stays after the cat.
TEST(Layouts, PointwiseStaysAfterACatItsUserCanFuse) {
  Graph g("prefill_rope");
  NodeId f = g.add_placeholder("f", f32({1, 8, 4}));
  NodeId emb = g.add_call("cat", {f, f}, {{"dim", int64_t{-1}}}, "emb");
  NodeId cos = g.add_call("cos", {emb}, {}, "cos");
  NodeId k = g.add_placeholder("k", f32({1, 1, 8, 8}));
  NodeId q = g.add_placeholder("q", f32({1, 4, 8, 8}));
  NodeId c4 = g.add_call("reshape", {cos}, {{"shape", Shape{1, 1, 8, 8}}}, "cos4");
  g.set_output({g.add_call("mul", {k, c4}), g.add_call("mul", {q, c4})});
  EXPECT_EQ(print_graph(pointwise_into_cat(g)), print_graph(g));
  // With only the per-head user (32 rows against the table's 8) it moves into the cat.
  Graph h("decode_rope");
  f = h.add_placeholder("f", f32({1, 8, 4}));
  cos = h.add_call("cos", {h.add_call("cat", {f, f}, {{"dim", int64_t{-1}}}, "emb")}, {}, "cos");
  h.set_output({h.add_call("mul", {h.add_placeholder("q", f32({1, 4, 8, 8})), h.add_call("reshape", {cos}, {{"shape", Shape{1, 1, 8, 8}}})})});
  Graph r = eliminate_dead_code(pointwise_into_cat(h));
  EXPECT_EQ(r.node(r.find("cos")).op, "cat");
  EXPECT_EQ(r.node(r.find("cos_cat0")).op, "cos");
}
