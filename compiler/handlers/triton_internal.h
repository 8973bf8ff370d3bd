// Internals of the Triton source handler (triton_source.h), shared by its three files:
//   triton_expr.cpp     the ops handler: values are Triton-language expressions
//   triton_plan.cpp     kernel plans: mode, grid, buffers, storage
//   triton_kernels.cpp  the @triton.jit functions
//   triton_module.cpp   the module: prelude, BUFFER_PLAN, allocate / launch / run
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "handlers/ops_handler.h"
#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu::triton {

// Python identifier from a buffer or kernel name.
std::string py_ident(const std::string& s);
// A Python string literal.
std::string py_string(const std::string& s);
// A float literal that reads back as exactly float(v); float("inf") / float("nan") for specials.
std::string py_float(double v);
// "tl.float32", "tl.float16", ... and "torch.float32", ...
const char* tl_dtype(DType t);
const char* torch_dtype(DType t);
int64_t next_pow2(int64_t v);

// Indented Python lines (4 spaces per level).
class PyWriter {
 public:
  void line(const std::string& s) { out_ << std::string(static_cast<size_t>(4 * depth_), ' ') << s << "\n"; }
  void open(const std::string& head) {
    line(head);
    ++depth_;
  }
  void close() { --depth_; }
  void blank() { out_ << "\n"; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int depth_ = 0;
};

// How the loop variables of a node print where a body is evaluated: each variable's Python
// expression, the mask that guards it ("" for none: a row variable is always in range), and
// its range (Index::bounds proves div/mod operands non-negative with it).
struct Scope {
  std::map<LoopVar, std::string> var;
  std::map<LoopVar, std::string> mask;
  std::map<LoopVar, int64_t> range;
};

// An index as int64 Python arithmetic over the scope's variables. Throws InputError (naming
// `node` and `what`) for a variable the scope does not bind.
std::string index_py(const Index& idx, const Scope& scope, const std::string& node, const std::string& what);
// The masks of the variables `idx` uses, joined with &, or "" when none guards it.
std::string mask_for(const Index& idx, const Scope& scope);

// The ops handler. Values are operand tokens: a temporary's name (tN, numbered per kernel) or a
// Python literal. `reduction` returns the body value: the kernel emitter writes the combine.
class TritonExprHandler final : public OpsHandler<std::string> {
 public:
  TritonExprHandler(const LoopNode& n, const std::map<std::string, std::string>& ptrs, PyWriter& w, int& next_tmp)
      : n_(n), ptrs_(ptrs), w_(w), next_tmp_(next_tmp) {}
  Scope scope;
  void clear_cse() { cse_.clear(); }
  bool is_literal(const std::string& v) const { return literals_.count(v) > 0; }

  std::string load(const ExprNode& e) override;
  std::string constant(double value, DType dtype) override;
  std::string index_expr(const Index& index) override;
  std::string to_dtype(std::string x, DType dtype) override;
  std::string reduction(ReductionType, std::string v) override { return v; }
  std::string call(ScalarOp op, const std::vector<std::string>& args, DType dtype) override;
  // A load with an explicit mask (gathers: the table row is a loaded value).
  std::string raw_load(const std::string& ptr_expr, const std::string& mask);
  std::string temp(const std::string& expr);
  std::string ptr(const std::string& buffer) const;

 private:
  const LoopNode& n_;
  const std::map<std::string, std::string>& ptrs_;
  PyWriter& w_;
  int& next_tmp_;
  std::map<std::string, std::string> cse_;
  std::map<std::string, double> literals_;
};

// What one scheduled kernel becomes.
struct KernelPlan {
  const Kernel* kernel = nullptr;
  std::string fn;                          // the @triton.jit function ("" for host)
  std::string mode;                        // "rows" | "grid" | "dot" | "host"
  std::vector<int64_t> grid;               // "grid" mode: {0}, one program per SM (the launcher's)
  int64_t block = 0;                       // column block (rows mode with column split)
  std::vector<std::string> args;           // buffers passed, in parameter order
  std::vector<std::string> reads, writes;  // HBM reads (not produced here); every buffer stored
  std::string why_not_rows;                // when mode is "grid"
};

struct ModulePlan {
  std::vector<KernelPlan> kernels;
  std::map<std::string, std::string> storage;  // buffer -> "input" | "hbm" | "scratch"
  std::vector<std::string> buffers;            // inputs, then first-write order
  std::map<std::string, int64_t> index_bound;  // gather index buffers: the table's row count
};

// One kernel's @triton.jit function: `body` is the function with the name left as @FN@ and
// positional pointer parameters p0, p1, ... (kp.args in order), so that kernels of identical code
// (the same layer of a model, once per layer) share one function and one Triton compilation;
// `comment` says which buffers the parameters are and what the nodes compute.
struct KernelText {
  std::string comment, body;
};
KernelText emit_kernel(const LoopProgram& p, const KernelPlan& kp);

// plan_module, then the kernels' texts, with KernelPlan::fn shared between identical bodies.
ModulePlan plan_module(const LoopProgram& p, const Schedule& s);
// A matmul node tl.dot can run: sum over r0 of mul(load A, load B), A over (m, r0), B over (r0, n).
bool dot_operands(const LoopNode& n, Expr& a, Expr& b);
int64_t tile(int64_t n, int64_t cap);  // a tl.dot block: a power of two in [16, cap]
int64_t cdiv(int64_t a, int64_t b);
// The buffers a node reads (host inputs, gather table and index, loads), in first-use order.
std::vector<std::string> node_reads(const LoopNode& n);
std::vector<Expr> node_loads(const LoopNode& n);  // every Load, the gather index's too
// Why node `c`'s load `l` of a buffer that earlier nodes `ws` of its kernel wrote might read
// outside the row that the same row of `ws` wrote ("" when it cannot). `exact`: it reads exactly
// the element written at the same (row, column), so column blocks may be split too.
std::string local_read_problem(const LoopNode& c, const Expr& l, const std::vector<const LoopNode*>& ws, bool& exact);
// A grid kernel's work items for a node: rows x column blocks of `block` columns (1 column block
// and block 0 for a reduction, which walks its own columns).
int64_t grid_block(const LoopNode& n);
int64_t grid_col_blocks(const LoopNode& n);
std::vector<KernelText> emit_kernels(const LoopProgram& p, ModulePlan& mp);

}  // namespace lpu::triton
