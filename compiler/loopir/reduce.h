// The meaning of every ReductionType: one accumulator shared by the interpreter handler and
// the VXE model, so the loop IR and the hardware model cannot drift apart. (The C++ source
// handler emits the same rules as text; its test runs the result against this.)
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

#include "loopir/loop_ir.h"

namespace lpu {

class Reducer {
 public:
  explicit Reducer(ReductionType t);
  void add(double x);
  double result() const;

 private:
  ReductionType type_;
  double acc_ = 0;    // sum / prod / max / min; argmax: the best value so far
  double mean_ = 0;   // var: running mean
  double m2_ = 0;     // var: sum of squared deviations from the running mean
  int64_t count_ = 0;
  int64_t arg_ = 0;   // argmax
};

}  // namespace lpu
