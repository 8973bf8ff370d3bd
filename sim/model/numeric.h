// Element conversions between HBM dtypes and the LMU's fp32 (round to nearest even).
#pragma once
#include <cstdint>
#include <cstring>

#include "graph/types.h"

namespace lpu::sim {

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

// Reads/writes one element of dtype `t` at `p`, as fp32.
float load_element(const uint8_t* p, DType t);
void store_element(uint8_t* p, DType t, float v);

}  // namespace lpu::sim
