// The loop-IR verifier (loopir/loop_ir.h, verify_loop_ir): the rules every pass after lowering
// relies on, checked in one place so a broken program fails here, naming the node, instead of
// as a wrong number or an out-of-bounds access in codegen or the simulator.
#include <map>
#include <set>

#include "graph/collective.h"
#include "loopir/loop_ir.h"
#include "support/error.h"

namespace lpu {

namespace {

class Verifier {
 public:
  explicit Verifier(const LoopProgram& p) : p_(p) {}

  void run() {
    for (const auto& [name, b] : p_.buffers)
      if (name != b.name) fail_program(strcat("buffer listed as '", name, "' is named '", b.name, "'"));
    check_list(p_.inputs, "input", {BufferRole::Input, BufferRole::Weight});
    check_list(p_.outputs, "output", {BufferRole::Output});
    // Readers come after every writer: the last writer of each buffer, by position.
    std::map<std::string, size_t> last_writer;
    for (size_t k = 0; k < p_.nodes.size(); ++k) last_writer[p_.nodes[k].out()] = k;
    std::set<std::string> names;
    for (size_t k = 0; k < p_.nodes.size(); ++k) {
      const LoopNode& n = p_.nodes[k];
      node_ = &n;
      if (!names.insert(n.name).second) fail("a second node of this name");
      check_node(n);
      for (const std::string& b : reads(n))
        if (auto it = last_writer.find(b); it != last_writer.end() && it->second >= k)
          fail(strcat("reads buffer ", b, " before (or while) node ", p_.nodes[it->second].name, " writes it"));
    }
  }

 private:
  [[noreturn]] void fail_program(const std::string& why) const {
    throw InputError(strcat("loop IR ", p_.name, ": ", why));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(strcat("loop IR ", p_.name, ": node ", node_->name, ": ", why));
  }

  void check_list(const std::vector<std::string>& names, const char* what, std::set<BufferRole> roles) const {
    std::set<std::string> seen;
    for (const auto& n : names) {
      auto it = p_.buffers.find(n);
      if (it == p_.buffers.end()) fail_program(strcat(what, " ", n, " is not a buffer"));
      if (!roles.count(it->second.role))
        fail_program(strcat(what, " ", n, " is a buffer of role ", buffer_role_name(it->second.role)));
      if (!seen.insert(n).second) fail_program(strcat(what, " ", n, " listed twice"));
    }
  }

  const Buffer& buffer(const std::string& name, const char* what) const {
    auto it = p_.buffers.find(name);
    if (it == p_.buffers.end()) fail(strcat(what, " unknown buffer '", name, "'"));
    return it->second;
  }

  std::vector<std::string> reads(const LoopNode& n) const {
    std::vector<std::string> out;
    if (is_opaque(n.kind)) return n.host_inputs;
    for (const Expr& l : n.loads()) out.push_back(l->buffer);
    return out;
  }

  void check_node(const LoopNode& n) {
    seen_.clear();
    empty_ = false;  // a range of 0: the node runs no iteration (an empty tensor), so no bounds
    for (int64_t r : n.ranges) {
      if (r < 0) fail(strcat("a loop range of ", r));
      empty_ = empty_ || r == 0;
    }
    for (int64_t r : n.reduction_ranges) {
      if (r < 0) fail(strcat("a reduction range of ", r));
      empty_ = empty_ || r == 0;
    }
    const bool reduces = n.kind == LoopKind::Reduction || n.kind == LoopKind::Matmul;
    if (reduces && n.reduction_ranges.empty()) fail("a reduction without reduction ranges");
    if (!reduces && !n.reduction_ranges.empty()) fail("reduction ranges on a node that does not reduce");
    if (n.kind == LoopKind::Matmul && n.reduction != ReductionType::sum) fail("a matmul reduces by sum only");

    vars_ = n.var_ranges();
    out_vars_.clear();
    for (size_t d = 0; d < n.ranges.size(); ++d) out_vars_[LoopVar::output(d)] = n.ranges[d];

    const Buffer& out = buffer(n.out(), "writes");
    if (out.role == BufferRole::Input || out.role == BufferRole::Weight)
      fail(strcat("writes ", n.out(), ", a buffer of role ", buffer_role_name(out.role)));
    if (out.type.dtype != n.dtype)
      fail(strcat("computes ", dtype_name(n.dtype), " into ", n.out(), ", a ", dtype_name(out.type.dtype), " buffer"));
    check_index(n.store_index, out, out_vars_, "stores");

    if (n.kind == LoopKind::Collective && !is_collective_op(n.host_op))
      fail(strcat("a collective node of op '", n.host_op, "' (expected all_reduce or all_gather)"));
    if (n.kind == LoopKind::Host && is_collective_op(n.host_op))
      fail(strcat("a host node of op '", n.host_op, "', a collective (write it as a collective node)"));
    if (is_opaque(n.kind)) {
      if (n.host_op.empty()) fail("a host node without an op");
      for (const auto& b : n.host_inputs) buffer(b, "reads");
      return;
    }
    if (!n.body) fail("no body");
    if (n.kind == LoopKind::Gather) {
      buffer(n.gather_table, "gathers from");
      if (!n.gather_index) fail("a gather without a table index");
      std::map<LoopVar, int64_t> rows = out_vars_;
      if (!n.ranges.empty()) rows.erase(n.column_var());
      check_expr(n.gather_index, rows);
      return;  // the body reads the gathered row indirectly: no affine bound to check
    }
    check_expr(n.body, vars_);
  }

  void check_expr(const Expr& e, const std::map<LoopVar, int64_t>& vars) {
    if (!e) fail("an empty expression");
    if (!seen_.insert(e.get()).second) return;
    switch (e->kind) {
      case ExprKind::Load: {
        const Buffer& b = buffer(e->buffer, "loads");
        if (b.type.dtype != e->dtype)
          fail(strcat("loads ", e->buffer, " as ", dtype_name(e->dtype), ", a ", dtype_name(b.type.dtype), " buffer"));
        check_index(e->index, b, vars, "loads");
        break;
      }
      case ExprKind::IndexExpr: check_vars(e->index, vars, "index()"); break;
      case ExprKind::Constant: break;
      case ExprKind::Cast:
        if (e->args.size() != 1) fail("a cast takes one operand");
        check_expr(e->args[0], vars);
        break;
      case ExprKind::Call:
        if (static_cast<int>(e->args.size()) != scalar_op_arity(e->op))
          fail(strcat(scalar_op_name(e->op), " with ", e->args.size(), " operand(s), expected ",
                      scalar_op_arity(e->op)));
        for (const Expr& a : e->args) check_expr(a, vars);
        break;
    }
  }

  void check_vars(const Index& index, const std::map<LoopVar, int64_t>& vars, const std::string& what) const {
    for (const LoopVar& v : index.variables())
      if (!vars.count(v)) fail(strcat(what, " index ", index.str(), " uses ", v.name(), ", not a loop variable here"));
  }

  // Over the node's ranges the index must stay in [0, elements of the buffer).
  void check_index(const Index& index, const Buffer& b, const std::map<LoopVar, int64_t>& vars,
                   const char* what) const {
    check_vars(index, vars, strcat(what, " ", b.name));
    if (empty_) return;
    int64_t lo = 0, hi = 0;
    if (!index.bounds(vars, lo, hi)) fail(strcat(what, " ", b.name, " at ", index.str(), ": no bound over the ranges"));
    int64_t n = b.type.numel();
    if (lo < 0 || hi >= n)
      fail(strcat(what, " ", b.name, "[", index.str(), "], elements ", lo, "..", hi, " of a buffer of ", n));
  }

  const LoopProgram& p_;
  const LoopNode* node_ = nullptr;
  std::map<LoopVar, int64_t> vars_, out_vars_;
  std::set<const ExprNode*> seen_;  // of the node being checked (a shared subexpression once)
  bool empty_ = false;
};

}  // namespace

void verify_loop_ir(const LoopProgram& p) { Verifier(p).run(); }

}  // namespace lpu
