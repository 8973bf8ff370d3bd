#include "ref/tensor.h"

#include <cmath>

#include "support/error.h"

namespace lpu {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

Tensor random_tensor(const TensorType& t, uint64_t seed) {
  Tensor x(t);
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& v : x.data) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t bits = static_cast<uint32_t>(state >> 40);  // 24 random bits
    v = static_cast<float>(bits) / static_cast<float>(1u << 23) - 1.0f;
    if (t.dtype == DType::boolean) v = v > 0 ? 1.0f : 0.0f;
    if (t.dtype == DType::i64 || t.dtype == DType::i32) v = static_cast<float>(bits % 8);  // small indices
  }
  return x;
}

Comparison compare_tensors(const Tensor& actual, const Tensor& expected) {
  if (actual.data.size() != expected.data.size())
    throw CheckFailed(strcat("size mismatch: ", actual.data.size(), " vs ", expected.data.size(), " elements"));
  Comparison c;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    double abs = std::fabs(a - e);
    if (std::isnan(a) != std::isnan(e)) abs = INFINITY;
    if (abs > c.max_abs_error || c.worst_index < 0) {
      if (abs > c.max_abs_error) c.max_abs_error = abs;
      c.worst_index = static_cast<int64_t>(i);
    }
    double rel = abs / std::max(std::fabs(e), 1e-6);
    if (rel > c.max_rel_error) c.max_rel_error = rel;
  }
  return c;
}

}  // namespace lpu
