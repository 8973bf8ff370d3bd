// The ops handler: one way to walk a loop-IR body, with the meaning of each op supplied by a
// handler object (TorchInductor's `ops.*` virtualisation, re-done with C++ virtuals).
//
//   V is the handler's value domain: a float array for the interpreter, a string for source
//   emitters, a local-memory vector for LPU assembly, a count for cost analysis.
//
// Every scalar op of LPU_SCALAR_OPS (ops/scalar_ops.h) gets a virtual method here with a default
// that forwards to `call(op, args)`, so a handler either implements `call` generically or
// overrides the ops it treats specially. A new scalar op added to the list appears in every
// handler through `call` with no edit here. Adding a target = adding a handler.
#pragma once
#include <unordered_map>
#include <vector>

#include "loopir/loop_ir.h"
#include "support/error.h"

namespace lpu {

template <typename V>
class OpsHandler {
 public:
  virtual ~OpsHandler() = default;

  virtual V load(const ExprNode& load) = 0;  // load.buffer, load.index, load.dtype
  virtual V constant(double value, DType dtype) = 0;
  virtual V index_expr(const Index& index) = 0;
  virtual V to_dtype(V x, DType dtype) = 0;
  // Reduces the node's body value over its reduction variables.
  virtual V reduction(ReductionType type, V value) = 0;
  // Generic form of every scalar op.
  virtual V call(ScalarOp op, const std::vector<V>& args, DType dtype) = 0;

#define LPU_HANDLER_DECL_1(name) \
  virtual V name(V a, DType t) { return call(ScalarOp::name, {a}, t); }
#define LPU_HANDLER_DECL_2(name) \
  virtual V name(V a, V b, DType t) { return call(ScalarOp::name, {a, b}, t); }
#define LPU_HANDLER_DECL_3(name) \
  virtual V name(V a, V b, V c, DType t) { return call(ScalarOp::name, {a, b, c}, t); }
#define LPU_HANDLER_DECL(name, arity, ...) LPU_HANDLER_DECL_##arity(name)
  LPU_SCALAR_OPS(LPU_HANDLER_DECL)
#undef LPU_HANDLER_DECL
#undef LPU_HANDLER_DECL_1
#undef LPU_HANDLER_DECL_2
#undef LPU_HANDLER_DECL_3
};

// Walks `e` bottom-up, visiting each shared subexpression once (memo keyed by node).
template <typename V>
V evaluate(const Expr& e, OpsHandler<V>& h, std::unordered_map<const ExprNode*, V>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  V result{};
  switch (e->kind) {
    case ExprKind::Load: result = h.load(*e); break;
    case ExprKind::Constant: result = h.constant(e->value, e->dtype); break;
    case ExprKind::IndexExpr: result = h.index_expr(e->index); break;
    case ExprKind::Cast: result = h.to_dtype(evaluate(e->args[0], h, memo), e->dtype); break;
    case ExprKind::Call: {
      std::vector<V> a;
      for (const auto& arg : e->args) a.push_back(evaluate(arg, h, memo));
      switch (e->op) {
#define LPU_DISPATCH_1(name) result = h.name(a[0], e->dtype)
#define LPU_DISPATCH_2(name) result = h.name(a[0], a[1], e->dtype)
#define LPU_DISPATCH_3(name) result = h.name(a[0], a[1], a[2], e->dtype)
#define LPU_DISPATCH(name, arity, ...) \
  case ScalarOp::name:                 \
    LPU_DISPATCH_##arity(name);        \
    break;
        LPU_SCALAR_OPS(LPU_DISPATCH)
#undef LPU_DISPATCH
#undef LPU_DISPATCH_1
#undef LPU_DISPATCH_2
#undef LPU_DISPATCH_3
      }
      break;
    }
  }
  memo.emplace(e.get(), result);
  return result;
}

// Whether a node reduces its body over `reduction_ranges` (with `reduction`) or is a plain
// loop over `ranges`. Every handler asks this one function, never the kind itself, so a new
// kind that is a reduction in disguise (a matmul: sum over K of mul(load A, load B)) needs one
// line here and nothing in the handlers; a kind nobody classified is an error, not a guess.
inline bool node_reduces(const LoopNode& n) {
  switch (n.kind) {
    case LoopKind::Pointwise: return false;
    case LoopKind::Reduction: return true;
    case LoopKind::Matmul: return true;  // a sum over K of mul(load A, load B)
    case LoopKind::Gather:
      throw InputError(strcat("node ", n.name, ": a gather (embedding lookup) reads its table indirectly; this "
                              "handler does not support it"));
    case LoopKind::Host:
      throw InputError(strcat("node ", n.name, ": a graph break (op '", n.host_op, "' runs on the host, "
                              "--on-unsupported=break); this handler has no code for it"));
    case LoopKind::Collective:
      throw InputError(strcat("node ", n.name, ": a collective (", n.host_op,
                              " over the ESL, tensor parallelism); this handler has no code for it"));
  }
  throw InputError(strcat("node ", n.name, ": loop kind #", static_cast<int>(n.kind),
                          " is not known to the ops handlers (handlers/ops_handler.h: node_reduces)"));
}

// The value a node computes: its body, reduced when the node is a reduction.
template <typename V>
V evaluate_node(const LoopNode& n, OpsHandler<V>& h) {
  bool reduces = node_reduces(n);
  std::unordered_map<const ExprNode*, V> memo;
  V v = evaluate(n.body, h, memo);
  if (reduces) v = h.reduction(n.reduction, v);
  return v;
}

}  // namespace lpu
