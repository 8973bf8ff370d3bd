// The C++ reference of the VXE special-function RTL (sim/rtl/vxe_sfu.sv), bit for bit: the
// fixed-point e^x and a / b the verilated pipeline must reproduce exactly, and their values
// as doubles (for checking the stand-in against std::exp and real division).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lpu::rtl {

enum class SfuFunc { Exp = 0, Div = 1 };

inline constexpr int kSfuExpFracBits = 10;  // exp's input: Q5.10
inline constexpr int kSfuDivFracBits = 16;  // div's result: a / b * 2^16

// e^x for x in Q5.10: {e (int8), m (uint16)} packed as (e & 0xff) << 16 | m, e^x = m / 2^15 * 2^e.
inline uint32_t sfu_exp_ref(int16_t x) {
  constexpr int64_t kLog2eQ30 = 1549082005;                                          // log2(e) * 2^30
  constexpr int64_t kC[5] = {1073747468, 744075473, 259318101, 55823407, 14507911};  // 2^f ~ sum c_k f^k, Q2.30
  const int64_t t = int64_t{x} * kLog2eQ30;                                          // Q.40
  const int64_t e = t >= 0 ? t >> 40 : -((-t + (int64_t{1} << 40) - 1) >> 40);       // floor(t / 2^40)
  const auto f = static_cast<uint64_t>((t - e * (int64_t{1} << 40)) >> 24);          // frac(t), Q0.16
  uint64_t p = kC[4];
  for (int k = 3; k >= 0; --k) p = ((p * f) >> 16) + static_cast<uint64_t>(kC[k]);
  const uint64_t m = std::min<uint64_t>(p >> 15, 0xFFFF);
  return (static_cast<uint32_t>(e) & 0xFFu) << 16 | static_cast<uint32_t>(m);
}

inline double sfu_exp_value(uint32_t packed) {
  const auto e = static_cast<int8_t>((packed >> 16) & 0xFFu);
  return std::ldexp(static_cast<double>(packed & 0xFFFFu) / 32768.0, e);
}

// trunc(a * 2^16 / b), saturated to int32; b = 0 gives INT32_MAX for a >= 0, else INT32_MIN.
inline int32_t sfu_div_ref(int16_t a, int16_t b) {
  if (b == 0) return a >= 0 ? INT32_MAX : INT32_MIN;
  const int64_t q = (static_cast<int64_t>(std::abs(int{a})) << 16) / std::abs(int{b});
  const bool negative = (a < 0) != (b < 0);
  return static_cast<int32_t>(negative ? -q : std::min<int64_t>(q, INT32_MAX));
}

// What the pipeline delivers for one lane's operands (b unused by exp).
inline uint32_t sfu_ref(SfuFunc func, int16_t a, int16_t b) {
  return func == SfuFunc::Exp ? sfu_exp_ref(a) : static_cast<uint32_t>(sfu_div_ref(a, b));
}

}  // namespace lpu::rtl
