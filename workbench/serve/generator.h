// Synthetic request traces: arrivals from a Poisson or Gamma process, prompt and output lengths
// from fixed, uniform, Zipf, log-normal or empirical distributions. The same spec and seed give
// the same requests on any machine (serve/rng.h), and arrivals, prompt lengths and output
// lengths draw from separate streams: a capacity search that re-runs the generator at another
// rate gets the same lengths, and (for Poisson, or Gamma at the same CV) the same arrival
// pattern scaled in time.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "serve/request.h"

namespace lpu::serve {

struct ArrivalSpec {
  enum class Kind { Poisson, Gamma };
  Kind kind = Kind::Poisson;
  double rate = 1;  // requests per second (mean)
  double cv = 1;    // Gamma: coefficient of variation of the gaps (> 1 is burstier than Poisson)
};

struct LengthSpec {
  enum class Kind { Fixed, Uniform, Zipf, LogNormal, Empirical };
  Kind kind = Kind::Fixed;
  int64_t value = 128;           // Fixed
  int64_t min = 1, max = 1;      // Uniform, Zipf, LogNormal (clamped): inclusive range
  double zipf_s = 1;             // Zipf: P(min + k) proportional to 1 / (k + 1)^s
  double median = 0, sigma = 1;  // LogNormal: median and the sigma of log(length)
  std::vector<int64_t> samples;  // Empirical: drawn uniformly (a trace's column)
};

struct GeneratorSpec {
  int64_t requests = 100;
  uint64_t seed = 1;
  ArrivalSpec arrival;
  LengthSpec prompt, output;
};

// InputError on a bad spec (rate <= 0, empty range, ...). Request ids are 0..N-1; the first
// request arrives one gap after time 0.
RequestList generate_requests(const GeneratorSpec& spec);
inline constexpr int64_t kMaxGeneratedRequests = 10'000'000;

// Specs from text, for command lines and sweep files ("what" names the flag in messages):
//   arrivals: poisson | gamma:CV
//   lengths:  N | fixed:N | uniform:MIN:MAX | zipf:S:MIN:MAX | lognormal:MEDIAN:SIGMA:MIN:MAX
//             | empirical:TRACE_FILE:prompt|output
ArrivalSpec parse_arrival_spec(const std::string& text, double rate, const std::string& what);
LengthSpec parse_length_spec(const std::string& text, const std::string& what);

// A trace file's prompt or output lengths, for an empirical LengthSpec.
std::vector<int64_t> trace_lengths(const std::string& path, bool prompt);

// The CSV trace format read_trace reads (arrival times rounded to microseconds).
void write_trace_csv(const RequestList& requests, std::ostream& out);

}  // namespace lpu::serve
