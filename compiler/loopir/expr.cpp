#include "loopir/expr.h"

#include "graph/graph.h"
#include "support/error.h"

namespace lpu {

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
