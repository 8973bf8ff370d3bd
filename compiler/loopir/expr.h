// Value-level expressions of the loop IR: the body of a Pointwise or Reduction node, a DAG
// of small immutable nodes. Every scalar op is listed once in LPU_SCALAR_OPS; the ops
// handler interface (handlers/ops_handler.h) is generated from the same list, so a new op
// shows up in every handler at compile time.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/types.h"
#include "loopir/index.h"

namespace lpu {

// X(name, arity, class) -- class is the cost class used by counting and the VXE op table.
#define LPU_SCALAR_OPS(X)         \
  X(neg, 1, alu)                  \
  X(abs, 1, alu)                  \
  X(relu, 1, alu)                 \
  X(exp, 1, transcendental)       \
  X(log, 1, transcendental)       \
  X(tanh, 1, transcendental)      \
  X(erf, 1, transcendental)       \
  X(sin, 1, transcendental)       \
  X(cos, 1, transcendental)       \
  X(sigmoid, 1, transcendental)   \
  X(rsqrt, 1, transcendental)     \
  X(sqrt, 1, transcendental)      \
  X(reciprocal, 1, divide)        \
  X(add, 2, alu)                  \
  X(sub, 2, alu)                  \
  X(mul, 2, alu)                  \
  X(div, 2, divide)               \
  X(maximum, 2, alu)              \
  X(minimum, 2, alu)              \
  X(pow, 2, transcendental)       \
  X(lt, 2, alu)                   \
  X(le, 2, alu)                   \
  X(gt, 2, alu)                   \
  X(ge, 2, alu)                   \
  X(eq, 2, alu)                   \
  X(ne, 2, alu)                   \
  X(where, 3, alu)

enum class ScalarOp {
#define LPU_ENUM_OP(name, arity, cls) name,
  LPU_SCALAR_OPS(LPU_ENUM_OP)
#undef LPU_ENUM_OP
};

const char* scalar_op_name(ScalarOp op);
int scalar_op_arity(ScalarOp op);
const char* scalar_op_class(ScalarOp op);  // "alu", "transcendental", "divide"
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
