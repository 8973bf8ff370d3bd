// PyTorch's core ATen opset (compiler/graph/data/core_aten_ops-torch-2.11.txt): every op is
// lowered, decomposed or a priced host op; and the op table's semantics agree across the
// reference executor, the compiled LPU program (simulated, fused and unfused) and the ATen
// decompositions on hand-computed torch results.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "driver/aten_coverage.h"
#include "driver/compile.h"
#include "graph/ops.h"
#include "loopir/expr.h"
#include "ref/reference.h"
#include "simulator.h"
#include "support/error.h"
#include "test_util.h"

using namespace lpu;

TEST(CoreAtenCoverage, EveryOpIsLoweredDecomposedOrOnTheHost) {
  CoreAtenSet set = core_aten_coverage();
  EXPECT_EQ(set.torch_version, "2.11.0+cu130");
  size_t overloads = 0;
  for (const auto& op : set.ops) overloads += op.overloads.size();
  EXPECT_EQ(set.ops.size(), 160u);
  EXPECT_EQ(overloads, 189u);
  std::string missing;
  for (const auto& op : set.ops)
    if (op.handling == "missing") missing += " aten." + op.name;
  EXPECT_EQ(missing, "") << "core ATen ops neither lowered, decomposed nor host-priced:" << missing;
}

TEST(CoreAtenCoverage, RejectsAMalformedList) {
  std::string path = testing::TempDir() + "/bad_core_ops.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("torch_version 2.11\nadd Tensor extra\n", f);
  std::fclose(f);
  try {
    core_aten_coverage(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":2: expected"), std::string::npos) << e.what();
  }
}

namespace {

// Inputs in the domain of `op` (log of positives, acosh of >= 1, bitwise of integers...).
Tensor input_for(ScalarOp op, const TensorType& t, int which) {
  Tensor x(t);
  std::string name = scalar_op_name(op), typing = scalar_op_typing(op);
  for (size_t i = 0; i < x.data.size(); ++i) {
    // Every third element of a comparison's operands is equal: ties must agree too.
    size_t w = typing == "compare" && i % 3 == 0 ? 0 : static_cast<size_t>(which);
    double u = (static_cast<double>((i * 7 + w * 3) % 23) - 11.0) / 11.0;  // [-1, 1]
    double v = u * 3.0;
    if (name == "log" || name == "log2" || name == "log10" || name == "sqrt" || name == "rsqrt" || name == "pow")
      v = which == 0 ? std::fabs(v) + 0.25 : u * 2.0;
    if (name == "log1p") v = std::fabs(v);
    if (name == "asin" || name == "acos" || name == "atanh") v = u * 0.9;
    if (name == "acosh") v = std::fabs(v) + 1.0;
    if (name == "reciprocal" || ((name == "div" || name == "fmod" || name == "remainder") && which == 1))
      v = (u >= 0 ? 1 : -1) * (std::fabs(v) + 0.5);
    if (typing == "bits") v = std::round(std::fabs(v) * 5);
    if (typing == "select" && which == 0) v = i % 2;
    if (name == "round" || name == "floor" || name == "ceil" || name == "trunc") v = u * 2.5 + (i % 4 == 0 ? 0.5 : 0.0);
    x.data[i] = static_cast<float>(v);
  }
  return x;
}

DType dtype_for(ScalarOp op, int which) {
  std::string typing = scalar_op_typing(op);
  if (typing == "bits") return DType::i64;
  if (typing == "select" && which == 0) return DType::boolean;
  return DType::f32;
}

}  // namespace

// Each scalar op of the table, as a one-op graph: the simulated LPU program (which computes
// with eval_scalar_op on the VXE) equals the reference executor, fused and unfused.
TEST(ScalarOpTable, EveryOpRunsOnTheLpuLikeTheReference) {
  ArchConfig arch = testutil::small_arch();
  const std::vector<ScalarOp> ops = [] {
    std::vector<ScalarOp> v;
#define LPU_LIST_OP(name, ...) v.push_back(ScalarOp::name);
    LPU_SCALAR_OPS(LPU_LIST_OP)
#undef LPU_LIST_OP
    return v;
  }();
  for (ScalarOp op : ops) {
    Graph g(std::string("op_") + scalar_op_name(op));
    std::vector<NodeId> ids;
    TensorMap in;
    for (int k = 0; k < scalar_op_arity(op); ++k) {
      std::string nm(1, static_cast<char>('a' + k));
      TensorType t{dtype_for(op, k), {4, 24}};
      ids.push_back(g.add_placeholder(nm, t));
      in[nm] = input_for(op, t, k);
    }
    NodeId y = g.add_call(scalar_op_name(op), ids, {}, "y");
    // A second op so that fusion has something to fuse.
    NodeId z = g.node(y).type.dtype == DType::f32 ? g.add_call("add", {y, y}, {}, "z") : y;
    g.set_output({z});
    Tensor want = run_reference(g, in).at(0);
    for (const char* policy : {"greedy", "none"}) {
      CompileOptions co;
      co.fusion = policy;
      Compilation c = compile_graph(g, co);
      SimOptions so;
      so.functional = true;
      SimResult r = simulate(c.code.program, arch, so, &in);
      const Tensor& got = r.outputs.at(g.node(z).name);
      ASSERT_EQ(got.data.size(), want.data.size()) << scalar_op_name(op);
      for (size_t i = 0; i < want.data.size(); ++i) {
        float a = got.data[i], b = want.data[i];
        EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
            << scalar_op_name(op) << " (" << policy << ") element " << i << ": lpu " << a << ", reference " << b;
      }
    }
  }
}

namespace {

TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }
TensorType i64(Shape s) { return {DType::i64, std::move(s)}; }

Tensor tensor(const TensorType& t, std::vector<float> v) {
  Tensor x(t);
  x.data = std::move(v);
  return x;
}

// One aten op on the given inputs, normalised to core ops and run by the reference executor.
Tensor run_aten(const std::string& op, const std::vector<Tensor>& ins, Attrs attrs, int64_t result = -1) {
  Graph g;
  std::vector<NodeId> ids;
  TensorMap data;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name(1, static_cast<char>('a' + i));
    ids.push_back(g.add_placeholder(name, ins[i].type));
    data[name] = ins[i];
  }
  if (result >= 0) attrs["result"] = result;
  NodeId y = g.add_call(op, ids, std::move(attrs), "y");
  g.set_output({g.node(y).type.dtype == DType::f32 ? g.add_call("add", {y, g.add_call("full", {}, {{"value", 0.0}})}, {}, "out") : y});
  return run_reference(normalize_graph(g), data).at(0);
}

}  // namespace

// Hand-computed torch results for the decompositions and host ops real models use.
TEST(AtenSemantics, MatchTorchOnSmallExamples) {
  Tensor x = tensor(f32({2, 3}), {0.5f, -2.0f, 3.0f, 1.0f, 7.0f, -1.0f});
  // torch.clamp(x, min=0, max=2)
  EXPECT_EQ(run_aten("aten.clamp", {x}, {{"min", 0.0}, {"max", 2.0}}).data, (std::vector<float>{0.5f, 0, 2, 1, 2, 0}));
  // integer clamp, as MoE routing does on expert ids: clamp(i, 0, 3)
  EXPECT_EQ(run_aten("aten.clamp", {tensor(i64({4}), {-1, 2, 5, 3})}, {{"min", int64_t{0}}, {"max", int64_t{3}}}).data,
            (std::vector<float>{0, 2, 3, 3}));
  // torch.topk(x, 2, dim=1): values [[3, 0.5], [7, 1]], indices [[2, 0], [1, 0]]
  EXPECT_EQ(run_aten("aten.topk", {x}, {{"k", int64_t{2}}}, 0).data, (std::vector<float>{3, 0.5f, 7, 1}));
  EXPECT_EQ(run_aten("aten.topk", {x}, {{"k", int64_t{2}}}, 1).data, (std::vector<float>{2, 0, 1, 0}));
  // torch.gather(x, 1, [[2, 2], [0, 1]])
  EXPECT_EQ(run_aten("aten.gather", {x, tensor(i64({2, 2}), {2, 2, 0, 1})}, {{"dim", int64_t{1}}}).data,
            (std::vector<float>{3, 3, 1, 7}));
  // x[[1, 0, 1]] and x[:, [2, 0]] (None in the index list -> indexed_dims)
  EXPECT_EQ(run_aten("aten.index", {x, tensor(i64({3}), {1, 0, 1})}, {}).data,
            (std::vector<float>{1, 7, -1, 0.5f, -2, 3, 1, 7, -1}));
  EXPECT_EQ(run_aten("aten.index", {x, tensor(i64({2}), {2, 0})}, {{"indexed_dims", std::vector<int64_t>{1}}}).data,
            (std::vector<float>{3, 0.5f, -1, 1}));
  // torch.cumsum(x, 1), torch.sort(x, 1, descending=True).indices, torch.argmax(x, 1)
  EXPECT_EQ(run_aten("aten.cumsum", {x}, {{"dim", int64_t{1}}}).data, (std::vector<float>{0.5f, -1.5f, 1.5f, 1, 8, 7}));
  EXPECT_EQ(run_aten("aten.sort", {x}, {{"dim", int64_t{1}}, {"descending", true}}, 1).data, (std::vector<float>{2, 0, 1, 1, 0, 2}));
  EXPECT_EQ(run_aten("aten.argmax", {x}, {{"dim", int64_t{1}}}).data, (std::vector<float>{2, 1}));
  // torch.histc(x, bins=4, min=0, max=4) (HF MoE: tokens per expert): bins [0.5] [1] [] [3]; 7 and
  // -2, -1 outside; torch.histc([2, 2]) over its own one-value range, widened to [1, 3]
  EXPECT_EQ(run_aten("aten.histc", {x}, {{"bins", int64_t{4}}, {"min", 0.0}, {"max", 4.0}}).data,
            (std::vector<float>{1, 1, 0, 1}));
  EXPECT_EQ(run_aten("aten.histc", {tensor(f32({2}), {2, 2})}, {{"bins", int64_t{2}}}).data, (std::vector<float>{0, 2}));
  // index_add (MoE combine): zeros(3, 2).index_add(0, [2, 0, 2], rows)
  Tensor rows = tensor(f32({3, 2}), {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_aten("aten.index_add", {tensor(f32({3, 2}), {0, 0, 0, 0, 0, 0}), tensor(i64({3}), {2, 0, 2}), rows}, {{"dim", int64_t{0}}}).data,
            (std::vector<float>{3, 4, 0, 0, 6, 8}));
  // scatter(zeros(2, 3), 1, [[1], [2]], 5.0)
  EXPECT_EQ(run_aten("aten.scatter", {tensor(f32({2, 3}), {0, 0, 0, 0, 0, 0}), tensor(i64({2, 1}), {1, 2})},
                     {{"dim", int64_t{1}}, {"value", 5.0}}).data,
            (std::vector<float>{0, 5, 0, 0, 0, 5}));
  // repeat and repeat_interleave
  Tensor v = tensor(f32({2}), {1, 2});
  EXPECT_EQ(run_aten("aten.repeat", {v}, {{"repeats", std::vector<int64_t>{2, 2}}}).data, (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(run_aten("aten.repeat_interleave", {v}, {{"repeats", int64_t{3}}}).data, (std::vector<float>{1, 1, 1, 2, 2, 2}));
  // any over the last dim, keepdim; div with floor rounding; remainder with Python's sign
  EXPECT_EQ(run_aten("aten.any", {tensor(f32({2, 2}), {0, 0, 0, 3})}, {{"dim", int64_t{-1}}, {"keepdim", true}}).data,
            (std::vector<float>{0, 1}));
  EXPECT_EQ(run_aten("aten.div", {tensor(f32({2}), {-7, 7}), tensor(f32({2}), {2, 2})}, {{"rounding_mode", std::string("floor")}}).data,
            (std::vector<float>{-4, 3}));
  EXPECT_EQ(run_aten("aten.remainder", {tensor(f32({2}), {-7, 7})}, {{"other", 3.0}}).data, (std::vector<float>{2, 1}));
  // log_softmax of [0, ln 3] = [-ln 4, ln 3 - ln 4]
  Tensor ls = run_aten("aten._log_softmax", {tensor(f32({2}), {0.0f, std::log(3.0f)})}, {{"dim", int64_t{0}}, {"half_to_float", false}});
  EXPECT_NEAR(ls.data[0], -std::log(4.0), 1e-6);
  EXPECT_NEAR(ls.data[1], std::log(3.0) - std::log(4.0), 1e-6);
  // constant_pad_nd([1, 2], [1, 0], value 9) -> [9, 1, 2]
  EXPECT_EQ(run_aten("aten.constant_pad_nd", {v}, {{"pad", std::vector<int64_t>{1, 0}}, {"value", 9.0}}).data,
            (std::vector<float>{9, 1, 2}));
}

// SDPA decomposes to the eager attention formula (two queries, three keys, one head).
TEST(AtenSemantics, ScaledDotProductAttentionMatchesTheFormula) {
  Tensor q = tensor(f32({1, 2, 2}), {1, 0, 0, 1});
  Tensor k = tensor(f32({1, 3, 2}), {1, 0, 0, 1, 1, 1});
  Tensor v = tensor(f32({1, 3, 1}), {1, 2, 3});
  for (bool causal : {false, true}) {
    Tensor y = run_aten("aten.scaled_dot_product_attention", {q, k, v}, {{"is_causal", causal}});
    for (int i = 0; i < 2; ++i) {
      double w[3], sum = 0, acc = 0;
      for (int j = 0; j < 3; ++j) {
        double s = (q.data[static_cast<size_t>(2 * i)] * k.data[static_cast<size_t>(2 * j)] +
                    q.data[static_cast<size_t>(2 * i + 1)] * k.data[static_cast<size_t>(2 * j + 1)]) / std::sqrt(2.0);
        w[j] = causal && j > i ? 0 : std::exp(s);
        sum += w[j];
      }
      for (int j = 0; j < 3; ++j) acc += w[j] / sum * v.data[static_cast<size_t>(j)];
      EXPECT_NEAR(y.data[static_cast<size_t>(i)], acc, 1e-6) << "causal " << causal << " row " << i;
    }
  }
}

// Host ops compile to graph breaks by default (no flag needed) and run on the host.
TEST(AtenSemantics, HostOpsAreGraphBreaksByDefault) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4, 8}));
  NodeId s = g.add_call("aten.softmax", {x}, {{"dim", int64_t{-1}}}, "p");
  NodeId t = g.add_call("aten.cumsum", {s}, {{"dim", int64_t{1}}}, "top");
  g.set_output({g.add_call("aten.mul", {t}, {{"other", 2.0}}, "y")});
  Compilation c = compile_graph(g, CompileOptions{});
  int breaks = 0;
  for (const auto& n : c.loop_ir.nodes) breaks += n.kind == LoopKind::Host;
  EXPECT_EQ(breaks, 1);
  TensorMap in{{"x", random_tensor(f32({4, 8}), 3)}};
  SimOptions so;
  so.functional = true;
  SimResult r = simulate(c.code.program, testutil::small_arch(), so, &in);
  Tensor want = run_reference(c.core, in).at(0);
  // The softmax's division by its row sum runs as a reciprocal and a multiply on the LPU
  // (codegen/tile_plan.h, divides_by_row_value): one more fp32 rounding than the reference.
  const auto& got = r.outputs.at(c.core.node(c.core.outputs()[0]).name).data;
  ASSERT_EQ(got.size(), want.data.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.data[i], 1e-6 * std::fabs(want.data[i]) + 1e-7) << i;
}

// MoE routing on the LPU: topk (values and indices) and the expert gather (aten.index at dim 0
// of a weight) take their core forms; only the iota the topk rounds share stays on the host.
// Ties go to the lower index and a negative index wraps, as the host ops (and torch) do.
// HuggingFace's batched_mm experts multiply W[ids] @ x (the gathered weights on the A side):
// gathered_weights_as_b turns it into (x^T W[ids]^T)^T, so the experts stream from the table
// (sxe.gemm_gather) and no gather writes them to HBM; same values fused and unfused.
TEST(AtenSemantics, ExpertsOnTheASideStreamFromTheTable) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({4, 8, 1}));
  NodeId w = g.add_parameter("w", f32({3, 6, 8}));  // 3 experts of [6, 8]
  NodeId ids = g.add_placeholder("ids", i64({4}));
  NodeId wg = g.add_call("aten.index", {w, ids}, {}, "w_gathered");
  g.set_output({g.add_call("matmul", {wg, x}, {}, "y")});
  TensorMap in{{"x", random_tensor(f32({4, 8, 1}), 3)},
               {"w", random_tensor(f32({3, 6, 8}), 4)},
               {"ids", tensor(i64({4}), {2, 0, 2, -2})}};
  std::vector<Tensor> want = run_reference(g, in);
  for (const char* fusion : {"none", "greedy"}) {
    CompileOptions co;
    co.fusion = fusion;
    Compilation c = compile_graph(g, co);
    size_t streamed = 0, gathers = 0;
    for (const Instruction& i : c.code.program.code) {
      streamed += i.opcode == Opcode::SxeGemmGather;
      gathers += i.opcode == Opcode::DmaGather;
    }
    EXPECT_GT(streamed, 0u) << fusion;
    EXPECT_EQ(gathers, 0u) << fusion;
    SimOptions so;
    so.functional = true;
    SimResult r = simulate(c.code.program, testutil::small_arch(), so, &in);
    ASSERT_EQ(c.loop_ir.outputs.size(), 1u);
    const std::vector<float>& got = r.outputs.at(c.loop_ir.outputs[0]).data;
    ASSERT_EQ(got.size(), want[0].data.size());
    for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], want[0].data[e], 1e-5) << fusion << " element " << e;
  }
}

TEST(AtenSemantics, MoeRoutingRunsOnTheLpuLikeTheHostOps) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({3, 6}));
  NodeId w = g.add_parameter("w", f32({6, 2, 3}));
  NodeId tv = g.add_call("aten.topk", {x}, {{"k", int64_t{3}}, {"result", int64_t{0}}}, "top_values");
  NodeId ti = g.add_call("aten.topk", {x}, {{"k", int64_t{3}}, {"result", int64_t{1}}}, "top_ids");
  NodeId flat = g.add_call("reshape", {ti}, {{"shape", Shape{9}}}, "ids");
  NodeId six = g.add_call("full", {}, {{"value", 6.0}, {"dtype", std::string("i64")}}, "six");
  NodeId neg = g.add_call("sub", {flat, six}, {}, "ids_negative");  // -6..-1: wrap to 0..5
  NodeId rows = g.add_call("aten.index", {w, neg}, {}, "rows");
  // A sigmoid router picks its chosen experts' scores with aten.gather (negative ids wrap).
  NodeId picked = g.add_call("aten.gather", {x, g.add_call("sub", {ti, six}, {}, "ti_negative")},
                             {{"dim", int64_t{1}}}, "picked");
  g.set_output({g.add_call("add", {tv, g.add_call("full", {}, {{"value", 0.0}})}, {}, "values"), rows, picked});
  Compilation c = compile_graph(g, CompileOptions{});
  int breaks = 0;
  for (const auto& n : c.loop_ir.nodes) breaks += n.kind == LoopKind::Host;
  EXPECT_EQ(breaks, 1);  // the shared aten.arange
  // Ties (row 0: three 5s; row 2: all equal) and a NaN-free spread.
  TensorMap in{{"x", tensor(f32({3, 6}), {5, 1, 5, 0, 5, 2, -1, 4, 3, 9, 0, 4, 7, 7, 7, 7, 7, 7})},
               {"w", random_tensor(f32({6, 2, 3}), 5)}};
  std::vector<Tensor> want = run_reference(g, in);
  EXPECT_EQ(want.at(0).data, (std::vector<float>{5, 5, 5, 9, 4, 4, 7, 7, 7}));
  EXPECT_EQ(want.at(2).data, want.at(0).data);
  for (const char* fusion : {"none", "greedy"}) {
    CompileOptions co;
    co.fusion = fusion;
    Compilation cf = compile_graph(g, co);
    SimOptions so;
    so.functional = true;
    SimResult r = simulate(cf.code.program, testutil::small_arch(), so, &in);
    ASSERT_EQ(cf.loop_ir.outputs.size(), 3u);
    for (size_t o = 0; o < 3; ++o) {
      ASSERT_TRUE(r.outputs.count(cf.loop_ir.outputs[o])) << cf.loop_ir.outputs[o];
      EXPECT_EQ(r.outputs.at(cf.loop_ir.outputs[o]).data, want.at(o).data) << fusion << " output " << o;
    }
  }
}
