// The data-movement core ops and the general matmul: type inference (errors name the node)
// and exact reference semantics, checked against hand-computed torch results.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "graph/ops.h"
#include "ref/reference.h"
#include "support/error.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

// 0, 1, 2, ... in the given type.
Tensor iota(const TensorType& t) {
  Tensor x(t);
  std::iota(x.data.begin(), x.data.end(), 0.0f);
  return x;
}

// Runs a one-op graph on iota inputs named a, b, ...
Tensor run1(const std::string& op, const std::vector<TensorType>& ins, Attrs attrs) {
  Graph g;
  std::vector<NodeId> ids;
  TensorMap data;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name(1, static_cast<char>('a' + i));
    ids.push_back(g.add_placeholder(name, ins[i]));
    data[name] = iota(ins[i]);
  }
  g.set_output({g.add_call(op, ids, std::move(attrs), "y")});
  g.verify();
  return run_reference(g, data)[0];
}

std::vector<float> vals(const Tensor& t) { return t.data; }

void expect_error(const std::string& op, const std::vector<TensorType>& ins, Attrs attrs, const std::string& what) {
  Graph g;
  std::vector<NodeId> ids;
  for (size_t i = 0; i < ins.size(); ++i) ids.push_back(g.add_placeholder(std::string(1, static_cast<char>('a' + i)), ins[i]));
  try {
    g.add_call(op, ids, std::move(attrs), "bad");
    FAIL() << op << ": expected InputError containing '" << what << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("%bad"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(CoreOps, ReshapeKeepsRowMajorOrder) {
  Tensor y = run1("reshape", {f32({2, 3})}, {{"shape", std::vector<int64_t>{3, 2}}});
  EXPECT_EQ(y.type, f32({3, 2}));
  EXPECT_EQ(vals(y), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  expect_error("reshape", {f32({2, 3})}, {{"shape", std::vector<int64_t>{4, 2}}}, "cannot reshape");
  expect_error("reshape", {f32({2, 3})}, {{"shape", std::vector<int64_t>{-1, 2}}}, "empty or negative");
}

TEST(CoreOps, PermuteMovesDims) {
  // x[i, j, k] = 6i + 3j + k over [2, 2, 3]; y = x.permute(2, 0, 1): y[k, i, j] = x[i, j, k].
  Tensor y = run1("permute", {f32({2, 2, 3})}, {{"dims", std::vector<int64_t>{2, 0, 1}}});
  EXPECT_EQ(y.type, f32({3, 2, 2}));
  EXPECT_EQ(vals(y), (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  // Negative dims count from the end, as in torch: (-1, 0, 1) == (2, 0, 1).
  EXPECT_EQ(vals(run1("permute", {f32({2, 2, 3})}, {{"dims", std::vector<int64_t>{-1, 0, 1}}})), vals(y));
  expect_error("permute", {f32({2, 3})}, {{"dims", std::vector<int64_t>{0, 0}}}, "repeat");
  expect_error("permute", {f32({2, 3})}, {{"dims", std::vector<int64_t>{0}}}, "entries for rank 2");
}

TEST(CoreOps, ExpandBroadcastsSizeOneAndLeadingDims) {
  Tensor y = run1("expand", {f32({3, 1})}, {{"shape", std::vector<int64_t>{2, 3, 2}}});
  EXPECT_EQ(y.type, f32({2, 3, 2}));
  EXPECT_EQ(vals(y), (std::vector<float>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(run1("expand", {f32({3, 1})}, {{"shape", std::vector<int64_t>{-1, 4}}}).type, f32({3, 4}));
  expect_error("expand", {f32({3, 2})}, {{"shape", std::vector<int64_t>{3, 4}}}, "cannot expand");
  expect_error("expand", {f32({3, 2})}, {{"shape", std::vector<int64_t>{2}}}, "fewer dims");
}

TEST(CoreOps, SliceFollowsTorchSemantics) {
  auto sl = [](int64_t dim, int64_t start, int64_t end, int64_t step) {
    return Attrs{{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
  };
  // x[:, 1:10:2] of [2, 5]: end clamps to 5 -> columns 1, 3.
  Tensor y = run1("slice", {f32({2, 5})}, sl(1, 1, 10, 2));
  EXPECT_EQ(y.type, f32({2, 2}));
  EXPECT_EQ(vals(y), (std::vector<float>{1, 3, 6, 8}));
  // Negative start/end/dim: x[..., -3:-1] -> columns 2, 3; INT64_MAX end as FX emits it.
  EXPECT_EQ(vals(run1("slice", {f32({2, 5})}, sl(-1, -3, -1, 1))), (std::vector<float>{2, 3, 7, 8}));
  EXPECT_EQ(vals(run1("slice", {f32({2, 5})}, sl(0, 1, INT64_MAX, 1))), (std::vector<float>{5, 6, 7, 8, 9}));
  expect_error("slice", {f32({2, 5})}, sl(1, 3, 3, 1), "empty");
  expect_error("slice", {f32({2, 5})}, sl(1, 0, 3, 0), "step 0");
  expect_error("slice", {f32({2, 5})}, sl(2, 0, 3, 1), "dim 2 out of range");
}

TEST(CoreOps, CatConcatenatesAlongAnyDim) {
  Tensor y = run1("cat", {f32({2, 2}), f32({2, 1})}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(y.type, f32({2, 3}));
  EXPECT_EQ(vals(y), (std::vector<float>{0, 1, 0, 2, 3, 1}));
  Tensor z = run1("cat", {f32({1, 2}), f32({2, 2}), f32({1, 2})}, {{"dim", int64_t{0}}});
  EXPECT_EQ(vals(z), (std::vector<float>{0, 1, 0, 1, 2, 3, 0, 1}));
  expect_error("cat", {f32({2, 2}), f32({3, 1})}, {{"dim", int64_t{1}}}, "incompatible");
  expect_error("cat", {f32({2, 2}), TensorType{DType::f16, {2, 2}}}, {{"dim", int64_t{1}}}, "dtype");
}

TEST(CoreOps, EmbeddingGathersRowsAndRejectsBadIndices) {
  Graph g;
  NodeId w = g.add_parameter("w", f32({4, 3}));
  NodeId i = g.add_placeholder("i", {DType::i64, {2, 2}});
  g.set_output({g.add_call("embedding", {w, i}, {}, "emb")});
  EXPECT_EQ(g.node(g.outputs()[0]).type, f32({2, 2, 3}));
  TensorMap in{{"w", iota(f32({4, 3}))}, {"i", Tensor({DType::i64, {2, 2}})}};
  in["i"].data = {3, 0, 1, 3};
  EXPECT_EQ(vals(run_reference(g, in)[0]), (std::vector<float>{9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11}));
  in["i"].data = {3, 0, 4, 1};
  try {
    run_reference(g, in);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("%emb"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  expect_error("embedding", {f32({4, 3}), f32({2})}, {}, "indices must be i64");
}

TEST(CoreOps, MatmulKeepsTheWeightFormAndBroadcastsBatches) {
  // [2, K=3] x [3, 2]
  Tensor y = run1("matmul", {f32({2, 3}), f32({3, 2})}, {});
  EXPECT_EQ(vals(y), (std::vector<float>{10, 13, 28, 40}));
  // Rank-1 first operand: [3] x [3, 2] -> [2] (= row 0 of the above).
  Tensor v = run1("matmul", {f32({3}), f32({3, 2})}, {});
  EXPECT_EQ(v.type, f32({2}));
  EXPECT_EQ(vals(v), (std::vector<float>{10, 13}));
  // Batched with broadcasting: [2, 1, 2, 3] x [3, 3, 2] -> [2, 3, 2, 2]; a's batch repeats
  // over b's 3 batches, b's over a's 2.
  Graph g;
  NodeId a = g.add_placeholder("a", f32({2, 1, 2, 3}));
  NodeId b = g.add_placeholder("b", f32({3, 3, 2}));
  g.set_output({g.add_call("matmul", {a, b})});
  EXPECT_EQ(g.node(g.outputs()[0]).type, f32({2, 3, 2, 2}));
  TensorMap in{{"a", iota(f32({2, 1, 2, 3}))}, {"b", iota(f32({3, 3, 2}))}};
  Tensor r = run_reference(g, in)[0];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double want = 0;
          for (int k = 0; k < 3; ++k) want += (i * 6 + m * 3 + k) * (j * 6 + k * 2 + n);
          EXPECT_EQ(r.data[static_cast<size_t>(((i * 3 + j) * 2 + m) * 2 + n)], want) << i << j << m << n;
        }
  expect_error("matmul", {f32({2, 3}), f32({4, 2})}, {}, "inner dimensions differ");
  expect_error("matmul", {f32({2, 3}), f32({3})}, {}, "expected");
  expect_error("matmul", {f32({2, 2, 3}), f32({3, 3, 2})}, {}, "do not broadcast");
}

TEST(CoreOps, ToDtypeRoundsLikeTheTarget) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({5}));
  NodeId i = g.add_call("to_dtype", {x}, {{"dtype", std::string("i64")}});
  NodeId h = g.add_call("to_dtype", {x}, {{"dtype", std::string("f16")}});
  NodeId b = g.add_call("to_dtype", {x}, {{"dtype", std::string("bool")}});
  g.set_output({i, h, b});
  Tensor t(f32({5}));
  t.data = {-1.5f, 2.7f, 0.0f, 1.0f + 1.0f / 2048, 65519.0f};
  auto r = run_reference(g, {{"x", t}});
  EXPECT_EQ(vals(r[0]), (std::vector<float>{-1, 2, 0, 1, 65519}));
  // 1 + 2^-11 is halfway between halves 1 and 1 + 2^-10: ties to even (1). 65519 -> 65504.
  EXPECT_EQ(vals(r[1]), (std::vector<float>{-1.5f, 2.69921875f, 0, 1, 65504}));
  EXPECT_EQ(vals(r[2]), (std::vector<float>{1, 1, 0, 1, 1}));
}

TEST(CoreOps, HalfAndBfloat16BitConversions) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);          // overflows to inf
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(half_bits_to_float(0xfc00)));
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits_to_float(0x4049), 3.140625f);
  EXPECT_EQ(float_to_bf16_bits(1.00390625f), 0x3f80);  // halfway: ties to even
  for (uint32_t h = 0; h < 0x7c00; ++h)               // every finite positive half round-trips
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h))), h) << h;
}
