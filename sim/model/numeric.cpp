#include "model/numeric.h"

#include <cmath>

namespace lpu::sim {

uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t mant = x & 0x7fffff;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));  // inf / nan
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);                          // overflow -> inf
  if (e <= 0) {                                                                       // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float f16_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= sign;
    std::memcpy(&f, &u, 4);
    return f;
  }
  uint32_t u = exp == 0x1f ? (sign | 0x7f800000 | (mant << 13)) : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  std::memcpy(&f, &u, 4);
  return f;
}

float load_element(const uint8_t* p, DType t) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16_to_float(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<float>(v);
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<float>(v);
    }
    case DType::boolean: return *p ? 1.0f : 0.0f;
  }
  return 0;
}

void store_element(uint8_t* p, DType t, float v) {
  switch (t) {
    case DType::f32: std::memcpy(p, &v, 4); return;
    case DType::f16: {
      uint16_t h = float_to_f16(v);
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::bf16: {
      uint16_t h = float_to_bf16(v);
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::i64: {
      int64_t x = static_cast<int64_t>(std::llround(v));
      std::memcpy(p, &x, 8);
      return;
    }
    case DType::i32: {
      int32_t x = static_cast<int32_t>(std::lround(v));
      std::memcpy(p, &x, 4);
      return;
    }
    case DType::boolean: *p = v != 0 ? 1 : 0; return;
  }
}

}  // namespace lpu::sim
