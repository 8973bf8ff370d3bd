// THE op table: every scalar (element-wise) op of the compiler, in one place, and the ScalarOp
// enum made from it. A leaf (no other layer below it): the graph IR, the loop IR, the ISA and
// the simulator all use it without seeing each other (docs/layers.md). Everything else is
// generated from it (docs/core-ops.md, "The scalar op table"):
//   graph/ops.cpp           the core op of the same name in the op registry (arity, typing, doc)
//   ref/reference.cpp       reference semantics   = eval_scalar_op (ops/scalar_ops.cpp)
//   handlers/interpreter    loop-IR interpreter   = eval_scalar_op
//   handlers/cpp_source     C++ source            = the EXPR text below, operands spliced in
//   handlers/ops_handler.h  one virtual per op; codegen emits `vxe.NAME`
//   sim/config              VXE latency / issue interval by COST class (configs may override)
//   handlers/counting       op counts by COST class
//
// X(NAME, ARITY, COST, TYPING, EXPR, DOC)
//   COST    alu | divide | transcendental
//   TYPING  how the core op types its operands (graph/ops.cpp):
//             unary    one floating operand -> its type
//             binary   two operands of one dtype -> that dtype, numpy broadcasting
//             compare  two operands of one dtype -> bool
//             test     one floating operand -> bool
//             bits     two bool or integer operands of one dtype -> that dtype
//             select   bool condition, two operands of one dtype -> that dtype
//   EXPR    the value as a C++ expression over `float a0, a1, a2` (values are fp32 on the
//           host; bool is 0/1, integers are exact below 2^24). It is compiled into
//           eval_scalar_op AND spliced as text into the generated C++, so the two agree bit
//           for bit. Parenthesise it (commas), and give bool results as 1.0f / 0.0f.
#pragma once
#include <string>

// clang-format off
#define LPU_SCALAR_OPS(X)                                                                                   \
  X(neg,         1, alu,            unary,   (-a0),                                  "-x")                \
  X(abs,         1, alu,            unary,   (std::fabs(a0)),                        "|x|")               \
  X(relu,        1, alu,            unary,   (a0 > 0 ? a0 : 0.0f),                   "max(x, 0)")         \
  X(sign,        1, alu,            unary,   (a0 > 0.0f ? 1.0f : a0 < 0.0f ? -1.0f : a0), "-1, 0 or 1")    \
  X(floor,       1, alu,            unary,   (std::floor(a0)),                       "round down")        \
  X(ceil,        1, alu,            unary,   (std::ceil(a0)),                        "round up")          \
  X(round,       1, alu,            unary,   (std::nearbyint(a0)),                   "round half to even") \
  X(trunc,       1, alu,            unary,   (std::trunc(a0)),                       "round toward zero") \
  X(exp,         1, transcendental, unary,   (std::exp(a0)),                         "e^x")               \
  X(expm1,       1, transcendental, unary,   (std::expm1(a0)),                       "e^x - 1")           \
  X(log,         1, transcendental, unary,   (std::log(a0)),                         "natural log")       \
  X(log1p,       1, transcendental, unary,   (std::log1p(a0)),                       "log(1 + x)")        \
  X(log2,        1, transcendental, unary,   (std::log2(a0)),                        "base-2 log")        \
  X(log10,       1, transcendental, unary,   (std::log10(a0)),                       "base-10 log")       \
  X(sin,         1, transcendental, unary,   (std::sin(a0)),                         "sine")              \
  X(cos,         1, transcendental, unary,   (std::cos(a0)),                         "cosine")            \
  X(tan,         1, transcendental, unary,   (std::tan(a0)),                         "tangent")           \
  X(asin,        1, transcendental, unary,   (std::asin(a0)),                        "arc sine")          \
  X(acos,        1, transcendental, unary,   (std::acos(a0)),                        "arc cosine")        \
  X(atan,        1, transcendental, unary,   (std::atan(a0)),                        "arc tangent")       \
  X(sinh,        1, transcendental, unary,   (std::sinh(a0)),                        "hyperbolic sine")   \
  X(cosh,        1, transcendental, unary,   (std::cosh(a0)),                        "hyperbolic cosine") \
  X(tanh,        1, transcendental, unary,   (std::tanh(a0)),                        "hyperbolic tangent") \
  X(asinh,       1, transcendental, unary,   (std::asinh(a0)),                       "inverse sinh")      \
  X(acosh,       1, transcendental, unary,   (std::acosh(a0)),                       "inverse cosh")      \
  X(atanh,       1, transcendental, unary,   (std::atanh(a0)),                       "inverse tanh")      \
  X(erf,         1, transcendental, unary,   (std::erf(a0)),                         "error function")    \
  X(sigmoid,     1, transcendental, unary,   (1.0f / (1.0f + std::exp(-a0))),        "1 / (1 + e^-x)")    \
  X(rsqrt,       1, transcendental, unary,   (1.0f / std::sqrt(a0)),                 "1 / sqrt(x)")       \
  X(sqrt,        1, transcendental, unary,   (std::sqrt(a0)),                        "square root")       \
  X(reciprocal,  1, divide,         unary,   (1.0f / a0),                            "1 / x")             \
  X(is_nan,      1, alu,            test,    (std::isnan(a0) ? 1.0f : 0.0f),         "x is NaN")          \
  X(is_inf,      1, alu,            test,    (std::isinf(a0) ? 1.0f : 0.0f),         "x is +-inf")        \
  X(add,         2, alu,            binary,  (a0 + a1),                              "a + b")             \
  X(sub,         2, alu,            binary,  (a0 - a1),                              "a - b")             \
  X(mul,         2, alu,            binary,  (a0 * a1),                              "a * b")             \
  X(div,         2, divide,         binary,  (a0 / a1),                              "a / b")             \
  X(maximum,     2, alu,            binary,  (std::max(a0, a1)),                     "max(a, b)")         \
  X(minimum,     2, alu,            binary,  (std::min(a0, a1)),                     "min(a, b)")         \
  X(pow,         2, transcendental, binary,  (std::pow(a0, a1)),                     "a ** b")            \
  X(atan2,       2, transcendental, binary,  (std::atan2(a0, a1)),                   "atan(a / b), quadrant-aware") \
  X(fmod,        2, divide,         binary,  (std::fmod(a0, a1)),                    "remainder, sign of a") \
  X(remainder,   2, divide,         binary,  (std::fmod(a0, a1) != 0.0f && ((std::fmod(a0, a1) < 0.0f) != (a1 < 0.0f)) \
                                              ? std::fmod(a0, a1) + a1 : std::fmod(a0, a1)), "remainder, sign of b (Python %)") \
  X(bitwise_and, 2, alu,            bits,    (static_cast<float>(static_cast<long long>(a0) & static_cast<long long>(a1))), "a & b") \
  X(bitwise_or,  2, alu,            bits,    (static_cast<float>(static_cast<long long>(a0) | static_cast<long long>(a1))), "a | b") \
  X(bitwise_xor, 2, alu,            bits,    (static_cast<float>(static_cast<long long>(a0) ^ static_cast<long long>(a1))), "a ^ b") \
  X(lt,          2, alu,            compare, (a0 < a1 ? 1.0f : 0.0f),                "a < b")             \
  X(le,          2, alu,            compare, (a0 <= a1 ? 1.0f : 0.0f),               "a <= b")            \
  X(gt,          2, alu,            compare, (a0 > a1 ? 1.0f : 0.0f),                "a > b")             \
  X(ge,          2, alu,            compare, (a0 >= a1 ? 1.0f : 0.0f),               "a >= b")            \
  X(eq,          2, alu,            compare, (a0 == a1 ? 1.0f : 0.0f),               "a == b")            \
  X(ne,          2, alu,            compare, (a0 != a1 ? 1.0f : 0.0f),               "a != b")            \
  X(where,       3, alu,            select,  (a0 != 0 ? a1 : a2),                    "cond ? a : b")
// clang-format on

namespace lpu {

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
const char* scalar_op_expr(ScalarOp op);  // the C++ expression over a0, a1, a2
bool parse_scalar_op(const std::string& name, ScalarOp& out);

// Reference semantics of one scalar op on fp32 operands (comparisons give 0/1).
float eval_scalar_op(ScalarOp op, const float* args);

}  // namespace lpu
