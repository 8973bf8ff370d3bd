#include "loopir/expr.h"

#include <algorithm>
#include <cmath>

#include "graph/graph.h"
#include "support/error.h"

namespace lpu {

const char* scalar_op_name(ScalarOp op) {
  switch (op) {
#define LPU_NAME_OP(name, arity, cls) \
  case ScalarOp::name: return #name;
    LPU_SCALAR_OPS(LPU_NAME_OP)
#undef LPU_NAME_OP
  }
  return "?";
}

int scalar_op_arity(ScalarOp op) {
  switch (op) {
#define LPU_ARITY_OP(name, arity, cls) \
  case ScalarOp::name: return arity;
    LPU_SCALAR_OPS(LPU_ARITY_OP)
#undef LPU_ARITY_OP
  }
  return 0;
}

const char* scalar_op_class(ScalarOp op) {
  switch (op) {
#define LPU_CLASS_OP(name, arity, cls) \
  case ScalarOp::name: return #cls;
    LPU_SCALAR_OPS(LPU_CLASS_OP)
#undef LPU_CLASS_OP
  }
  return "?";
}

bool parse_scalar_op(const std::string& name, ScalarOp& out) {
#define LPU_PARSE_OP(n, arity, cls) \
  if (name == #n) {                 \
    out = ScalarOp::n;              \
    return true;                    \
  }
  LPU_SCALAR_OPS(LPU_PARSE_OP)
#undef LPU_PARSE_OP
  return false;
}

float eval_scalar_op(ScalarOp op, const float* a) {
  switch (op) {
    case ScalarOp::neg: return -a[0];
    case ScalarOp::abs: return std::fabs(a[0]);
    case ScalarOp::relu: return a[0] > 0 ? a[0] : 0.0f;
    case ScalarOp::exp: return std::exp(a[0]);
    case ScalarOp::log: return std::log(a[0]);
    case ScalarOp::tanh: return std::tanh(a[0]);
    case ScalarOp::erf: return std::erf(a[0]);
    case ScalarOp::sin: return std::sin(a[0]);
    case ScalarOp::cos: return std::cos(a[0]);
    case ScalarOp::sigmoid: return 1.0f / (1.0f + std::exp(-a[0]));
    case ScalarOp::rsqrt: return 1.0f / std::sqrt(a[0]);
    case ScalarOp::sqrt: return std::sqrt(a[0]);
    case ScalarOp::reciprocal: return 1.0f / a[0];
    case ScalarOp::add: return a[0] + a[1];
    case ScalarOp::sub: return a[0] - a[1];
    case ScalarOp::mul: return a[0] * a[1];
    case ScalarOp::div: return a[0] / a[1];
    case ScalarOp::maximum: return std::max(a[0], a[1]);
    case ScalarOp::minimum: return std::min(a[0], a[1]);
    case ScalarOp::pow: return std::pow(a[0], a[1]);
    case ScalarOp::lt: return a[0] < a[1];
    case ScalarOp::le: return a[0] <= a[1];
    case ScalarOp::gt: return a[0] > a[1];
    case ScalarOp::ge: return a[0] >= a[1];
    case ScalarOp::eq: return a[0] == a[1];
    case ScalarOp::ne: return a[0] != a[1];
    case ScalarOp::where: return a[0] != 0 ? a[1] : a[2];
  }
  return 0;
}

Expr make_load(const std::string& buffer, Index index, DType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Load;
  n->buffer = buffer;
  n->index = std::move(index);
  n->dtype = dtype;
  return n;
}

Expr make_constant(double v, DType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Constant;
  n->value = v;
  n->dtype = dtype;
  return n;
}

Expr make_index_expr(Index index) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::IndexExpr;
  n->index = std::move(index);
  n->dtype = DType::i64;
  return n;
}

Expr make_call(ScalarOp op, std::vector<Expr> args, DType dtype) {
  LPU_CHECK(static_cast<int>(args.size()) == scalar_op_arity(op), "op ", scalar_op_name(op), " arity");
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Call;
  n->op = op;
  n->args = std::move(args);
  n->dtype = dtype;
  return n;
}

Expr make_cast(Expr arg, DType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Cast;
  n->args = {std::move(arg)};
  n->dtype = dtype;
  return n;
}

std::string expr_str(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Load: return "load(" + e->buffer + ", " + e->index.str() + ")";
    case ExprKind::Constant: return format_double(e->value);
    case ExprKind::IndexExpr: return "index(" + e->index.str() + ")";
    case ExprKind::Cast: return std::string("to_") + dtype_name(e->dtype) + "(" + expr_str(e->args[0]) + ")";
    case ExprKind::Call: {
      std::string s = std::string(scalar_op_name(e->op)) + "(";
      for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + expr_str(e->args[i]);
      return s + ")";
    }
  }
  return "?";
}

}  // namespace lpu
