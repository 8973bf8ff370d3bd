#include "ref/tensor.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "support/error.h"

namespace lpu {

float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: value = man * 2^-24, exact in float.
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // nan
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal multiple of 2^-24, rounded to even.
    float v = std::bit_cast<float>(ax);
    auto m = static_cast<uint32_t>(std::nearbyint(std::ldexp(v, 24)));
    return static_cast<uint16_t>(sign | m);  // m == 0x400 carries into the smallest normal
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even, then rebias the exponent.
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((r - (112u << 23)) >> 13));
}

float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float round_to_dtype(float v, DType t) {
  if (t == DType::f16) return half_bits_to_float(float_to_half_bits(v));
  if (t == DType::bf16) return bf16_bits_to_float(float_to_bf16_bits(v));
  return v;
}

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
    if (t.dtype == DType::f16 || t.dtype == DType::bf16) v = round_to_dtype(v, t.dtype);  // what the dtype holds
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
