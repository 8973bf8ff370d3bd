#include "serve/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "serve/rng.h"
#include "serve/trace_reader.h"
#include "support/error.h"

namespace lpu::serve {
namespace {

void check_spec(const LengthSpec& s, const char* what) {
  using K = LengthSpec::Kind;
  if (s.kind == K::Fixed && s.value < 1) throw InputError(strcat(what, " length: expected >= 1 tokens, got ", s.value));
  bool ranged = s.kind == K::Uniform || s.kind == K::Zipf || s.kind == K::LogNormal;
  if (ranged && (s.min < 1 || s.max < s.min))
    throw InputError(strcat(what, " length: expected 1 <= min <= max, got ", s.min, "..", s.max));
  if (s.kind == K::Zipf && (!(s.zipf_s > 0) || s.max - s.min > 10'000'000))
    throw InputError(strcat(what, " length: Zipf needs s > 0 and a range of at most 1e7 tokens"));
  if (s.kind == K::LogNormal && (!(s.median >= 1) || !(s.sigma >= 0) || !std::isfinite(s.median + s.sigma)))
    throw InputError(strcat(what, " length: log-normal needs median >= 1 and sigma >= 0"));
  if (s.kind == K::Empirical && s.samples.empty())
    throw InputError(strcat(what, " length: the empirical distribution has no samples"));
}

// Draws lengths for one spec; the Zipf table is built once.
class LengthSampler {
 public:
  LengthSampler(const LengthSpec& spec, Rng rng) : spec_(spec), rng_(rng) {
    if (spec.kind != LengthSpec::Kind::Zipf) return;
    double sum = 0;
    for (int64_t k = 0; k <= spec.max - spec.min; ++k) cdf_.push_back(sum += std::pow(k + 1.0, -spec.zipf_s));
  }
  int64_t draw() {
    using K = LengthSpec::Kind;
    switch (spec_.kind) {
      case K::Fixed: return spec_.value;
      case K::Uniform: return spec_.min + static_cast<int64_t>(rng_.below(spec_.max - spec_.min + 1));
      case K::Zipf: {
        double u = rng_.uniform01() * cdf_.back();
        return spec_.min + (std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
      }
      case K::LogNormal: {
        double x = std::round(spec_.median * std::exp(spec_.sigma * rng_.normal()));
        return std::clamp(static_cast<int64_t>(std::min(x, 1e12)), spec_.min, spec_.max);
      }
      case K::Empirical: return spec_.samples[rng_.below(spec_.samples.size())];
    }
    return spec_.value;
  }

 private:
  const LengthSpec& spec_;
  Rng rng_;
  std::vector<double> cdf_;
};

}  // namespace

RequestList generate_requests(const GeneratorSpec& spec) {
  if (spec.requests < 1) throw InputError(strcat("requests: expected >= 1, got ", spec.requests));
  // Every request is held (and simulated) in memory: past this the run would exhaust memory
  // long before it finished. Ten million is ~500x Azure's published day-long traces.
  if (spec.requests > kMaxGeneratedRequests)
    throw InputError(strcat("requests: at most ", kMaxGeneratedRequests, " generated requests, got ", spec.requests,
                            " (a larger study: a trace file, or several runs)"));
  if (!(spec.arrival.rate > 0) || !std::isfinite(spec.arrival.rate))
    throw InputError(strcat("rate: expected > 0 requests/s, got ", spec.arrival.rate));
  bool gamma = spec.arrival.kind == ArrivalSpec::Kind::Gamma;
  if (gamma && (!(spec.arrival.cv > 0) || !std::isfinite(spec.arrival.cv)))
    throw InputError(strcat("gamma arrivals: expected a CV > 0, got ", spec.arrival.cv));
  check_spec(spec.prompt, "prompt");
  check_spec(spec.output, "output");
  Rng arrivals = Rng::stream(spec.seed, 1);
  LengthSampler prompts(spec.prompt, Rng::stream(spec.seed, 2));
  LengthSampler outputs(spec.output, Rng::stream(spec.seed, 3));
  // Gamma gaps with shape k = 1/CV^2 and mean 1/rate: CV 1 is the Poisson process.
  double shape = gamma ? 1 / (spec.arrival.cv * spec.arrival.cv) : 1;
  RequestList out;
  double t = 0;
  for (int64_t i = 0; i < spec.requests; ++i) {
    t += gamma ? arrivals.gamma(shape) / (shape * spec.arrival.rate) : arrivals.exponential(spec.arrival.rate);
    out.push_back(Request{i, t, prompts.draw(), outputs.draw()});
  }
  return out;
}

std::vector<int64_t> trace_lengths(const std::string& path, bool prompt) {
  std::vector<int64_t> out;
  for (const Request& r : read_lengths(path)) out.push_back(prompt ? r.prompt_tokens : r.output_tokens);
  return out;
}

void write_trace_csv(const RequestList& requests, std::ostream& out) {
  out << "arrival_s,prompt_tokens,output_tokens,id\n";
  char buf[64];
  for (const Request& r : requests) {
    std::snprintf(buf, sizeof buf, "%.6f", r.arrival_s);
    out << buf << ',' << r.prompt_tokens << ',' << r.output_tokens << ',' << r.id << '\n';
  }
}

}  // namespace lpu::serve
