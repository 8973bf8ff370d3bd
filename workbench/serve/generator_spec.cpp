// The text forms of the generator's specs (serve/generator.h), for flags and sweep files.
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "serve/generator.h"
#include "support/error.h"

namespace lpu::serve {
namespace {

std::vector<std::string> split_colons(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream is(text);
  while (std::getline(is, part, ':')) parts.push_back(part);
  return parts;
}

double number(const std::string& text, const std::string& what, const std::string& whole) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw InputError(strcat(what, ": '", whole, "': expected a number, got '", text, "'"));
  return v;
}

int64_t whole_number(const std::string& text, const std::string& what, const std::string& whole) {
  double v = number(text, what, whole);
  if (v != std::floor(v) || std::fabs(v) > 1e12)
    throw InputError(strcat(what, ": '", whole, "': expected a whole number of tokens, got '", text, "'"));
  return static_cast<int64_t>(v);
}

[[noreturn]] void bad_length(const std::string& what, const std::string& text) {
  throw InputError(strcat(what, ": '", text,
                          "': expected N, fixed:N, uniform:MIN:MAX, zipf:S:MIN:MAX, "
                          "lognormal:MEDIAN:SIGMA:MIN:MAX or empirical:TRACE_FILE:prompt|output"));
}

}  // namespace

ArrivalSpec parse_arrival_spec(const std::string& text, double rate, const std::string& what) {
  ArrivalSpec spec;
  spec.rate = rate;
  std::vector<std::string> p = split_colons(text);
  if (p.size() == 1 && p[0] == "poisson") return spec;
  if (p.size() == 2 && p[0] == "gamma") {
    spec.kind = ArrivalSpec::Kind::Gamma;
    spec.cv = number(p[1], what, text);
    return spec;
  }
  throw InputError(strcat(what, ": '", text, "': expected poisson or gamma:CV"));
}

LengthSpec parse_length_spec(const std::string& text, const std::string& what) {
  using K = LengthSpec::Kind;
  std::vector<std::string> p = split_colons(text);
  LengthSpec s;
  if (p.size() == 1 && !p[0].empty() && std::isdigit(static_cast<unsigned char>(p[0][0]))) p.insert(p.begin(), "fixed");
  if (p.empty()) bad_length(what, text);
  const std::string& kind = p[0];
  if (kind == "fixed" && p.size() == 2) {
    s.value = whole_number(p[1], what, text);
  } else if (kind == "uniform" && p.size() == 3) {
    s.kind = K::Uniform;
    s.min = whole_number(p[1], what, text), s.max = whole_number(p[2], what, text);
  } else if (kind == "zipf" && p.size() == 4) {
    s.kind = K::Zipf;
    s.zipf_s = number(p[1], what, text);
    s.min = whole_number(p[2], what, text), s.max = whole_number(p[3], what, text);
  } else if (kind == "lognormal" && p.size() == 5) {
    s.kind = K::LogNormal;
    s.median = number(p[1], what, text), s.sigma = number(p[2], what, text);
    s.min = whole_number(p[3], what, text), s.max = whole_number(p[4], what, text);
  } else if (kind == "empirical" && p.size() == 3 && (p[2] == "prompt" || p[2] == "output")) {
    s.kind = K::Empirical;
    s.samples = trace_lengths(p[1], p[2] == "prompt");
  } else {
    bad_length(what, text);
  }
  return s;
}

}  // namespace lpu::serve
