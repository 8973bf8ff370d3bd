// Value-level expressions of the loop IR: the body of a Pointwise or Reduction node, a DAG
// of small immutable nodes. Every scalar op is listed once in LPU_SCALAR_OPS
// (loopir/scalar_ops.h); the ops handler interface (handlers/ops_handler.h), the registry's
// core pointwise ops and the reference semantics are generated from the same table.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/types.h"
#include "loopir/index.h"

namespace lpu {

#include "loopir/scalar_ops.h"

enum class ScalarOp {
#define LPU_ENUM_OP(name, arity, cls, ...) name,
  LPU_SCALAR_OPS(LPU_ENUM_OP)
#undef LPU_ENUM_OP
};

const char* scalar_op_name(ScalarOp op);
int scalar_op_arity(ScalarOp op);
const char* scalar_op_class(ScalarOp op);   // "alu", "transcendental", "divide"
const char* scalar_op_typing(ScalarOp op);  // "unary", "binary", "compare", "test", "bits", "select"
const char* scalar_op_doc(ScalarOp op);
const char* scalar_op_expr(ScalarOp op);    // the C++ expression over a0, a1, a2
bool parse_scalar_op(const std::string& name, ScalarOp& out);

// Reference semantics of one scalar op on fp32 operands (comparisons give 0/1).
float eval_scalar_op(ScalarOp op, const float* args);

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
