#include "loopir/reduce.h"

#include <algorithm>
#include <cmath>

namespace lpu {

Reducer::Reducer(ReductionType t) : type_(t) {
  switch (t) {
    case ReductionType::sum:
    case ReductionType::mean:
    case ReductionType::var: acc_ = 0; break;
    case ReductionType::prod: acc_ = 1; break;
    case ReductionType::max:
    case ReductionType::argmax: acc_ = -INFINITY; break;
    case ReductionType::min: acc_ = INFINITY; break;
  }
}

void Reducer::add(double x) {
  switch (type_) {
    case ReductionType::sum:
    case ReductionType::mean: acc_ += x; break;
    case ReductionType::prod: acc_ *= x; break;
    case ReductionType::max: acc_ = std::max(acc_, x); break;
    case ReductionType::min: acc_ = std::min(acc_, x); break;
    case ReductionType::argmax:
      if (x > acc_ || (std::isnan(x) && !std::isnan(acc_))) {
        acc_ = x;
        arg_ = count_;
      }
      break;
    case ReductionType::var: {
      double d = x - mean_;
      mean_ += d / static_cast<double>(count_ + 1);
      m2_ += d * (x - mean_);
      break;
    }
  }
  ++count_;
}

double Reducer::result() const {
  switch (type_) {
    case ReductionType::sum:
    case ReductionType::prod:
    case ReductionType::max:
    case ReductionType::min: return acc_;
    case ReductionType::mean: return acc_ / static_cast<double>(count_);
    case ReductionType::argmax: return static_cast<double>(arg_);
    case ReductionType::var: return m2_ / static_cast<double>(count_);
  }
  return NAN;
}

}  // namespace lpu
