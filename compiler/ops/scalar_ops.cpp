#include "ops/scalar_ops.h"

#include <algorithm>
#include <cmath>

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
  if (name == #n) {                      \
    out = ScalarOp::n;                   \
    return true;                         \
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
#define LPU_EVAL_OP(name, arity, cls, typing, expr, doc)                                                \
  case ScalarOp::name: {                                                                                \
    [[maybe_unused]] const float a0 = a[0], a1 = arity > 1 ? a[1] : 0.0f, a2 = arity > 2 ? a[2] : 0.0f; \
    return static_cast<float>(expr);                                                                    \
  }
    LPU_SCALAR_OPS(LPU_EVAL_OP)
#undef LPU_EVAL_OP
  }
  return 0;
}

}  // namespace lpu
