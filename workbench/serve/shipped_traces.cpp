#include "serve/shipped_traces.h"

namespace lpu::serve {
namespace {

LengthSpec lognormal(double median, double sigma, int64_t min, int64_t max) {
  LengthSpec s;
  s.kind = LengthSpec::Kind::LogNormal;
  s.median = median, s.sigma = sigma, s.min = min, s.max = max;
  return s;
}

}  // namespace

// Medians and log-sigmas measured on Azure's public LLM inference traces of November 2023 (the
// data of the Splitwise paper, ISCA 2024); lengths are clamped so that prompt + output <= 4096,
// the context of LLaMA-2. Arrivals at 1 req/s: Poisson for chat (the conversation trace's gaps
// have a CV of 1.09), Gamma with CV 3 for code (its gaps are far burstier, CV 13).
std::vector<ShippedTrace> shipped_traces() {
  ShippedTrace chat{"workloads/traces/chat-1000.csv", {}};
  chat.spec.requests = 1000;
  chat.spec.seed = 2023;
  chat.spec.arrival.rate = 1;
  chat.spec.prompt = lognormal(1020, 0.99, 8, 3584);
  chat.spec.output = lognormal(129, 0.86, 4, 512);
  ShippedTrace code{"workloads/traces/code-1000.csv", {}};
  code.spec.requests = 1000;
  code.spec.seed = 2023;
  code.spec.arrival = ArrivalSpec{ArrivalSpec::Kind::Gamma, 1, 3};
  code.spec.prompt = lognormal(1469, 1.36, 8, 3584);
  code.spec.output = lognormal(13, 0.85, 4, 512);
  return {chat, code};
}

}  // namespace lpu::serve
