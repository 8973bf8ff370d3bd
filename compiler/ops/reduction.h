// Every reduction a Reduction node of the loop IR (and the VXE, as vxe.rNAME) can do, and the
// meaning of each: one accumulator shared by the interpreter handler and the VXE model, so the
// loop IR and the hardware model cannot drift apart. (The C++ source handler emits the same
// rules as text; its test runs the result against this.) A leaf, like the scalar op table
// (ops/scalar_ops.h). A new type gets a line in LPU_REDUCTION_TYPES and a case in Reducer and
// in each handler that emits reductions as text (the compiler's -Wswitch names them).
//
// Elements arrive in row-major order of the reduction domain; accumulation is in double, as in
// the reference executor.
//   sum, prod     the sum / product
//   max, min      the extreme value; a NaN is skipped (std::max(acc, x) keeps acc)
//   mean          sum / count
//   argmax        flattened index (row-major over r0, r1, ...) of the first maximum; a NaN
//                 counts as larger than any number, so the first NaN wins (as torch.argmax)
//   var           population variance (divide by count, no Bessel correction: what layer_norm
//                 needs), in one pass with Welford's update of (mean, M2), which does not
//                 cancel catastrophically like E[x^2] - E[x]^2
// Empty reductions: sum 0, prod 1, max -inf, min +inf, argmax 0, mean and var NaN.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#define LPU_REDUCTION_TYPES(X) X(sum) X(max) X(min) X(mean) X(prod) X(argmax) X(var)

namespace lpu {

enum class ReductionType {
#define LPU_ENUM_RED(name) name,
  LPU_REDUCTION_TYPES(LPU_ENUM_RED)
#undef LPU_ENUM_RED
};
const char* reduction_type_name(ReductionType t);
bool parse_reduction_type(const std::string& name, ReductionType& out);

// Torch's spelling of each type: the function torch.NAME (amax and amin for max and min, which
// torch.max/min would also return indices for) and scatter_reduce's `reduce` argument.
const char* torch_reduction_name(ReductionType t);
bool parse_torch_reduction(const std::string& name, ReductionType& out);

// The graph IR's reduction ops, in registry order (graph/ops.cpp registers one per entry): each
// op is named by torch's spelling of its type, and means that type over its `dims`. Everything
// that interprets a graph reduction (the reference executor, the lowering, the torch printer)
// asks graph_reduction_type instead of matching names.
const std::vector<ReductionType>& graph_reduction_types();
bool graph_reduction_type(const std::string& op, ReductionType& out);

class Reducer {
 public:
  explicit Reducer(ReductionType t);
  void add(double x);
  double result() const;

 private:
  ReductionType type_;
  double acc_ = 0;   // sum / prod / max / min; argmax: the best value so far
  double mean_ = 0;  // var: running mean
  double m2_ = 0;    // var: sum of squared deviations from the running mean
  int64_t count_ = 0;
  int64_t arg_ = 0;  // argmax
};

}  // namespace lpu
