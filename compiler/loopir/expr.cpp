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

DType implied_dtype(const ExprNode& e, DType buffer_dtype) {
  switch (e.kind) {
    case ExprKind::Load: return buffer_dtype;
    case ExprKind::Constant: return DType::f32;
    case ExprKind::IndexExpr: return DType::i64;
    case ExprKind::Cast: return e.dtype;
    case ExprKind::Call: {
      const std::string typing = scalar_op_typing(e.op);
      if (typing == "compare" || typing == "test") return DType::boolean;
      if (typing == "select") return e.args.at(1)->dtype;
      return e.args.at(0)->dtype;
    }
  }
  return e.dtype;
}

std::string expr_str(const Expr& e, const std::map<std::string, DType>* buffer_dtypes) {
  std::string s;
  switch (e->kind) {
    case ExprKind::Load: s = "load(" + e->buffer + ", " + e->index.str() + ")"; break;
    case ExprKind::Constant: s = format_double(e->value); break;
    case ExprKind::IndexExpr: s = "index(" + e->index.str() + ")"; break;
    case ExprKind::Cast: s = std::string("to_") + dtype_name(e->dtype) + "(" + expr_str(e->args[0], buffer_dtypes) + ")"; break;
    case ExprKind::Call: {
      s = std::string(scalar_op_name(e->op)) + "(";
      for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + expr_str(e->args[i], buffer_dtypes);
      s += ")";
      break;
    }
  }
  if (buffer_dtypes) {
    DType b = DType::f32;
    if (e->kind == ExprKind::Load)
      if (auto it = buffer_dtypes->find(e->buffer); it != buffer_dtypes->end()) b = it->second;
    if (e->dtype != implied_dtype(*e, b)) s += std::string(":") + dtype_name(e->dtype);
  }
  return s;
}

}  // namespace lpu
