#include "serve/rng.h"

#include <cmath>

namespace lpu::serve {

namespace {
// SplitMix64 (Steele et al.): decorrelates nearby seeds before they seed the Mersenne Twister.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

Rng Rng::stream(uint64_t seed, uint64_t stream_id) { return Rng(splitmix64(splitmix64(seed) ^ stream_id)); }

double Rng::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  // Reject the top partial range so every residue is equally likely.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

double Rng::exponential(double rate) { return -std::log(1.0 - uniform01()) / rate; }

double Rng::normal() {
  for (;;) {
    double u = 2 * uniform01() - 1, v = 2 * uniform01() - 1;
    double s = u * u + v * v;
    if (s > 0 && s < 1) return u * std::sqrt(-2 * std::log(s) / s);
  }
}

double Rng::gamma(double shape) {
  if (shape < 1) {
    // Boosting: G(a) = G(a + 1) * U^(1/a) keeps the fast method for small shapes.
    double u = uniform01();
    return gamma(shape + 1) * std::exp(std::log(1.0 - u) / shape);
  }
  double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = normal(), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = 1.0 - uniform01();  // (0, 1]: log(u) is finite
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace lpu::serve
