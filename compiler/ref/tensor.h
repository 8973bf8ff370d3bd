// Dense host tensor used for reference execution and functional simulation.
// Values are held as float regardless of the logical dtype (bool as 0/1, integers exact up to
// 2^24); the logical dtype decides byte counts, not host storage.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/types.h"

namespace lpu {

struct Tensor {
  TensorType type;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(TensorType t) : type(std::move(t)), data(static_cast<size_t>(type.numel()), 0.0f) {}
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

// IEEE binary16 and bfloat16 bit patterns <-> float (round to nearest even; NaN stays NaN).
float half_bits_to_float(uint16_t h);
uint16_t float_to_half_bits(float f);
float bf16_bits_to_float(uint16_t b);
uint16_t float_to_bf16_bits(float f);
// `v` rounded to the nearest value of a floating dtype (f32: unchanged).
float round_to_dtype(float v, DType t);

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);

// Deterministic pseudo-random data in [-1, 1) (a fixed LCG, the same on every machine).
Tensor random_tensor(const TensorType& t, uint64_t seed);

struct Comparison {
  double max_abs_error = 0;
  double max_rel_error = 0;  // |a-b| / max(|b|, 1e-6) at the worst element
  int64_t worst_index = -1;
};
Comparison compare_tensors(const Tensor& actual, const Tensor& expected);

using TensorMap = std::map<std::string, Tensor>;  // by graph node name

}  // namespace lpu
