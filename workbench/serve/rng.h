// Random numbers that are the same on every machine for a seed. The std:: distributions are
// implementation-defined (libstdc++ and libc++ draw different numbers from the same engine), so
// every sampler here is written out from std::mt19937_64, whose sequence the standard fixes.
// What remains platform-dependent is libm's log/exp/sqrt in the last bit (IEEE sqrt is exact;
// glibc's log and exp are correctly rounded in practice); traces written to files round times
// to microseconds, far above that.
#pragma once
#include <cstdint>
#include <random>

namespace lpu::serve {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // An independent stream for each use (arrivals, prompt lengths, output lengths): changing
  // one distribution leaves the others' draws as they were.
  static Rng stream(uint64_t seed, uint64_t stream_id);

  uint64_t next() { return engine_(); }
  double uniform01();               // [0, 1), 53 random bits
  uint64_t below(uint64_t n);       // [0, n), unbiased (rejection)
  double exponential(double rate);  // mean 1/rate
  double normal();                  // standard normal (Marsaglia's polar method)
  double gamma(double shape);       // mean `shape`, scale 1 (Marsaglia and Tsang)

 private:
  std::mt19937_64 engine_;
};

}  // namespace lpu::serve
