// Value-level expressions of the loop IR: the body of a Pointwise or Reduction node, a DAG
// of small immutable nodes. Every scalar op is listed once in LPU_SCALAR_OPS
// (ops/scalar_ops.h, with the ScalarOp enum); the ops handler interface
// (handlers/ops_handler.h), the registry's core pointwise ops and the reference semantics are
// generated from the same table.
#pragma once
#include <map>
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
// With `buffer_dtypes` (every buffer's dtype) the text is exact: a node whose dtype differs
// from the one its text implies (implied_dtype) carries it as a suffix, `2.0:f16`,
// `load(x, i0):f32`, so parse_loop_ir (loopir/loop_ir.h) rebuilds every dtype.
std::string expr_str(const Expr& e, const std::map<std::string, DType>* buffer_dtypes = nullptr);

// The dtype the text of `e` implies without a suffix: a load's buffer dtype, f32 for a
// constant, i64 for an index, the target of a cast, and for a call its op's typing
// (ops/scalar_ops.h): compare/test give bool, select the dtype of its second operand, the
// others that of the first. One rule for printer and parser, so the two cannot disagree.
DType implied_dtype(const ExprNode& e, DType buffer_dtype);

}  // namespace lpu
