// Value-level expressions of the loop IR: the body of a Pointwise or Reduction node, a DAG
// of small immutable nodes. Every scalar op is listed once in LPU_SCALAR_OPS
// (ops/scalar_ops.h, with the ScalarOp enum); the ops handler interface
// (handlers/ops_handler.h), the registry's core pointwise ops and the reference semantics are
// generated from the same table.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/types.h"
#include "loopir/index.h"
#include "ops/scalar_ops.h"

namespace lpu {

enum class ExprKind { Load, Constant, IndexExpr, Call, Cast };

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  DType dtype = DType::f32;
  // Load
  std::string buffer;
  Index index;
  // Constant
  double value = 0;
  // Call
  ScalarOp op = ScalarOp::add;
  std::vector<Expr> args;  // Call and Cast (one arg)
};

Expr make_load(const std::string& buffer, Index index, DType dtype);
Expr make_constant(double v, DType dtype);
Expr make_index_expr(Index index);
Expr make_call(ScalarOp op, std::vector<Expr> args, DType dtype);
Expr make_cast(Expr arg, DType dtype);

// Readable text, with shared subexpressions printed once per occurrence (bodies are small).
std::string expr_str(const Expr& e);

}  // namespace lpu
