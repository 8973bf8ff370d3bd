#include "loopir/expr.h"

#include <algorithm>
#include <cmath>

#include "graph/graph.h"
#include "support/error.h"

namespace lpu {

const char* scalar_op_name(ScalarOp op) {
  switch (op) {
#define LPU_NAME_OP(name, arity, cls, ...) \
  case ScalarOp::name: return #name;
    LPU_SCALAR_OPS(LPU_NAME_OP)
#undef LPU_NAME_OP
  }
  return "?";
}

int scalar_op_arity(ScalarOp op) {
  switch (op) {
#define LPU_ARITY_OP(name, arity, cls, ...) \
  case ScalarOp::name: return arity;
    LPU_SCALAR_OPS(LPU_ARITY_OP)
#undef LPU_ARITY_OP
  }
  return 0;
}

const char* scalar_op_class(ScalarOp op) {
  switch (op) {
#define LPU_CLASS_OP(name, arity, cls, ...) \
  case ScalarOp::name: return #cls;
    LPU_SCALAR_OPS(LPU_CLASS_OP)
#undef LPU_CLASS_OP
  }
  return "?";
}

bool parse_scalar_op(const std::string& name, ScalarOp& out) {
#define LPU_PARSE_OP(n, arity, cls, ...) \
  if (name == #n) {                 \
    out = ScalarOp::n;              \
    return true;                    \
  }
  LPU_SCALAR_OPS(LPU_PARSE_OP)
#undef LPU_PARSE_OP
  return false;
}

const char* scalar_op_typing(ScalarOp op) {
  switch (op) {
#define LPU_TYPING_OP(name, arity, cls, typing, ...) \
  case ScalarOp::name: return #typing;
    LPU_SCALAR_OPS(LPU_TYPING_OP)
#undef LPU_TYPING_OP
  }
  return "?";
}

const char* scalar_op_doc(ScalarOp op) {
  switch (op) {
#define LPU_DOC_OP(name, arity, cls, typing, expr, doc) \
  case ScalarOp::name: return doc;
    LPU_SCALAR_OPS(LPU_DOC_OP)
#undef LPU_DOC_OP
  }
  return "?";
}

const char* scalar_op_expr(ScalarOp op) {
  switch (op) {
#define LPU_EXPR_OP(name, arity, cls, typing, expr, doc) \
  case ScalarOp::name: return #expr;
    LPU_SCALAR_OPS(LPU_EXPR_OP)
#undef LPU_EXPR_OP
  }
  return "?";
}

// The table's EXPR compiled as is; a1/a2 read only for ops of that arity.
float eval_scalar_op(ScalarOp op, const float* a) {
  switch (op) {
#define LPU_EVAL_OP(name, arity, cls, typing, expr, doc)                                         \
  case ScalarOp::name: {                                                                         \
    [[maybe_unused]] const float a0 = a[0], a1 = arity > 1 ? a[1] : 0.0f, a2 = arity > 2 ? a[2] : 0.0f; \
    return static_cast<float>(expr);                                                             \
  }
    LPU_SCALAR_OPS(LPU_EVAL_OP)
#undef LPU_EVAL_OP
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
