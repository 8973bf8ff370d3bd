#include "ref/quantise.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "ref/tensor.h"
#include "support/error.h"

namespace lpu {

namespace {

float qmax(QuantFormat f) {
  switch (f) {
    case QuantFormat::int8: return 127.0f;
    case QuantFormat::int4: return 7.0f;
    case QuantFormat::fp8_e4m3: return 448.0f;
    case QuantFormat::none: break;
  }
  throw InternalError("quantise: no format");
}

// The smallest f16 >= s (s >= 0, finite), saturating at the largest finite f16.
uint16_t f16_round_up(float s) {
  uint16_t h = float_to_half_bits(s);
  if (h >= 0x7c00) return 0x7bff;  // past 65504: the largest finite half
  if (half_bits_to_float(h) < s) ++h;
  return h;
}

// The 127 non-negative finite E4M3 values, by code (0x00..0x7e): increasing.
const std::array<float, 127>& e4m3_values() {
  static const std::array<float, 127> v = [] {
    std::array<float, 127> a{};
    for (int c = 0; c < 127; ++c) a[static_cast<size_t>(c)] = fp8_e4m3_to_float(static_cast<uint8_t>(c));
    return a;
  }();
  return v;
}

}  // namespace

float fp8_e4m3_to_float(uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  if (e == 15 && m == 7) return std::nanf("");
  if (e == 0) return sign * std::ldexp(static_cast<float>(m) / 8.0f, -6);
  return sign * std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
}

uint8_t float_to_fp8_e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::min(std::fabs(f), 448.0f);
  const auto& v = e4m3_values();
  const auto hi = std::lower_bound(v.begin(), v.end(), a);  // first value >= a (exists: a <= 448)
  int c = static_cast<int>(hi - v.begin());
  if (c > 0) {
    const float up = v[static_cast<size_t>(c)] - a, down = a - v[static_cast<size_t>(c - 1)];
    if (down < up || (down == up && (c - 1) % 2 == 0)) --c;  // nearest, ties to the even code
  }
  return static_cast<uint8_t>(sign | c);
}

void pack_quantised(const float* v, int64_t n, const Quant& q, uint8_t* out) {
  if (!q.on() || q.group < 2 || n % q.group) throw InternalError("pack_quantised: not a whole number of groups");
  const float top = qmax(q.format);
  for (int64_t b = 0; b < n / q.group; ++b) {
    const float* x = v + b * q.group;
    uint8_t* blk = out + b * q.block_bytes();
    float amax = 0;
    for (int64_t o = 0; o < q.group; ++o)
      if (std::isfinite(x[o])) amax = std::max(amax, std::fabs(x[o]));
    const uint16_t sh = f16_round_up(amax / top);
    blk[0] = static_cast<uint8_t>(sh & 0xff);
    blk[1] = static_cast<uint8_t>(sh >> 8);
    const float s = half_bits_to_float(sh);
    uint8_t* codes = blk + 2;
    if (q.format == QuantFormat::int4) std::fill(codes, codes + q.code_bytes(), uint8_t{0});
    for (int64_t o = 0; o < q.group; ++o) {
      const float r = s > 0 && std::isfinite(x[o]) ? x[o] / s : 0.0f;
      if (q.format == QuantFormat::fp8_e4m3) {
        codes[o] = float_to_fp8_e4m3(r);
        continue;
      }
      const int c = static_cast<int>(std::clamp(std::nearbyint(r), -top, top));
      if (q.format == QuantFormat::int8)
        codes[o] = static_cast<uint8_t>(static_cast<int8_t>(c));
      else
        codes[o / 2] = static_cast<uint8_t>(codes[o / 2] | ((c & 0xf) << (o % 2 ? 4 : 0)));
    }
  }
}

float quantised_element(const uint8_t* block, int64_t o, const Quant& q) {
  const float s = half_bits_to_float(static_cast<uint16_t>(block[0] | (block[1] << 8)));
  const uint8_t* codes = block + 2;
  switch (q.format) {
    case QuantFormat::int8: return static_cast<float>(static_cast<int8_t>(codes[o])) * s;
    case QuantFormat::int4: {
      const int nib = (codes[o / 2] >> (o % 2 ? 4 : 0)) & 0xf;
      return static_cast<float>(nib >= 8 ? nib - 16 : nib) * s;
    }
    case QuantFormat::fp8_e4m3: return fp8_e4m3_to_float(codes[o]) * s;
    case QuantFormat::none: break;
  }
  throw InternalError("quantised_element: no format");
}

void fake_quantise(std::vector<float>& v, const Quant& q) {
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<uint8_t> packed(static_cast<size_t>(q.bytes(n)));
  pack_quantised(v.data(), n, q, packed.data());
  for (int64_t e = 0; e < n; ++e)
    v[static_cast<size_t>(e)] = quantised_element(&packed[static_cast<size_t>(q.block_offset(e))], e % q.group, q);
}

}  // namespace lpu
