#include "ops/reduction.h"

#include <algorithm>
#include <cmath>

namespace lpu {

const char* reduction_type_name(ReductionType t) {
  switch (t) {
#define LPU_NAME_RED(name) \
  case ReductionType::name: return #name;
    LPU_REDUCTION_TYPES(LPU_NAME_RED)
#undef LPU_NAME_RED
  }
  return "?";
}

bool parse_reduction_type(const std::string& name, ReductionType& out) {
#define LPU_PARSE_RED(n)    \
  if (name == #n) {         \
    out = ReductionType::n; \
    return true;            \
  }
  LPU_REDUCTION_TYPES(LPU_PARSE_RED)
#undef LPU_PARSE_RED
  return false;
}

const char* torch_reduction_name(ReductionType t) {
  switch (t) {
    case ReductionType::max: return "amax";
    case ReductionType::min: return "amin";
    default: return reduction_type_name(t);
  }
}

bool parse_torch_reduction(const std::string& name, ReductionType& out) {
#define LPU_PARSE_TORCH_RED(n)                          \
  if (name == torch_reduction_name(ReductionType::n)) { \
    out = ReductionType::n;                             \
    return true;                                        \
  }
  LPU_REDUCTION_TYPES(LPU_PARSE_TORCH_RED)
#undef LPU_PARSE_TORCH_RED
  return false;
}

const std::vector<ReductionType>& graph_reduction_types() {
  static const std::vector<ReductionType> types = {ReductionType::sum, ReductionType::mean, ReductionType::max,
                                                   ReductionType::min, ReductionType::argmax};
  return types;
}

bool graph_reduction_type(const std::string& op, ReductionType& out) {
  for (ReductionType t : graph_reduction_types())
    if (op == torch_reduction_name(t)) {
      out = t;
      return true;
    }
  return false;
}

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
