// Small loop-IR programs built by hand for handler tests: shapes and indices the built-in
// workloads do not produce (new reduction types, floordiv/mod, negative index arguments).
#pragma once
#include <string>

#include "loopir/loop_ir.h"
#include "ref/tensor.h"

namespace lpu::testprog {

inline Buffer buffer(const std::string& name, Shape shape, BufferRole role) {
  Buffer b;
  b.name = name;
  b.type = {DType::f32, shape};
  b.role = role;
  b.strides = contiguous_strides(shape);
  return b;
}

inline LoopNode reduction_node(const std::string& name, ReductionType t, int64_t rows, int64_t cols, Expr body) {
  LoopNode n;
  n.name = n.origin = name;
  n.kind = LoopKind::Reduction;
  n.ranges = {rows};
  n.reduction_ranges = {cols};
  n.reduction = t;
  n.body = std::move(body);
  n.store_index = Index::var(LoopVar::output(0));
  return n;
}

// x: f32[rows, cols] ->  p = prod_r x,  a = argmax_r x,  v = var_r (2x + 1); all outputs.
inline LoopProgram reductions(int64_t rows, int64_t cols) {
  LoopProgram p;
  p.name = "reductions";
  p.buffers["x"] = buffer("x", {rows, cols}, BufferRole::Input);
  p.inputs = {"x"};
  Index xi = Index::var(LoopVar::output(0)) * cols + Index::var(LoopVar::reduction(0));
  auto x = [&] { return make_load("x", xi, DType::f32); };
  Expr affine = make_call(ScalarOp::add,
                          {make_call(ScalarOp::mul, {x(), make_constant(2, DType::f32)}, DType::f32),
                           make_constant(1, DType::f32)},
                          DType::f32);
  for (auto [name, t, body] : {std::tuple{"p", ReductionType::prod, x()}, std::tuple{"a", ReductionType::argmax, x()},
                               std::tuple{"v", ReductionType::var, affine}}) {
    p.nodes.push_back(reduction_node(name, t, rows, cols, body));
    p.buffers[name] = buffer(name, {rows}, BufferRole::Output);
    p.outputs.push_back(name);
  }
  return p;
}

// Random data for every program input.
inline TensorMap random_inputs(const LoopProgram& p, uint64_t seed) {
  TensorMap m;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    m[p.inputs[i]] = random_tensor(p.buffers.at(p.inputs[i]).type, seed + i * 7919);
  return m;
}

}  // namespace lpu::testprog
