#include "sweep/sweep_serve.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>

#include "serve/cluster.h"
#include "serve/generator.h"
#include "serve/trace_reader.h"
#include "serve/validate.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

// Bool: the flag is given for true; NegBool: for false (--no-chunked-prefill).
enum class Kind { Int, Count, Number, Bool, NegBool, Text, Path };

struct ServeKey {
  const char* name;  // after "serve."
  const char* flag;  // the `lpu serve` flag
  Kind kind;
};

// The `lpu serve` flags a sweep may vary or fix (docs/serving.md "`lpu serve`"). Not here:
// --json/--csv (the sweep owns the point's output), --cost-cache (parallel points would share
// one memo, and a point's step costs would then depend on which points ran before it), --tp
// (the arch key `devices` is the same thing).
constexpr ServeKey kKeys[] = {
    {"rate", "--rate", Kind::Number},
    {"requests", "--requests", Kind::Int},
    {"seed", "--seed", Kind::Count},
    {"arrivals", "--arrivals", Kind::Text},
    {"prompt", "--prompt", Kind::Text},
    {"output", "--output", Kind::Text},
    {"trace_file", "--trace-file", Kind::Path},
    {"max_batched_tokens", "--max-batched-tokens", Kind::Int},
    {"max_seqs", "--max-seqs", Kind::Int},
    {"chunked_prefill", "--no-chunked-prefill", Kind::NegBool},
    {"chunk_size", "--chunk-size", Kind::Int},
    {"block_size", "--block-size", Kind::Int},
    {"replicas", "--replicas", Kind::Int},
    {"router", "--router", Kind::Text},
    {"prefill_replicas", "--prefill-replicas", Kind::Int},
    {"link_gbps", "--link-gbps", Kind::Number},
    {"link_latency_us", "--link-latency-us", Kind::Number},
    {"slo_ttft_ms", "--slo-ttft-ms", Kind::Number},
    {"slo_tpot_ms", "--slo-tpot-ms", Kind::Number},
    {"exact", "--exact", Kind::Bool},
    {"error_samples", "--error-samples", Kind::Int},
    {"find_rate", "--find-rate", Kind::Bool},
};

const ServeKey* find_key(const std::string& key) {
  if (!is_serve_key(key)) return nullptr;
  const std::string name = key.substr(std::char_traits<char>::length(kServeKeyPrefix));
  for (const ServeKey& k : kKeys)
    if (name == k.name) return &k;
  return nullptr;
}

bool parse_int(const std::string& s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// "" when `value` has the key's type, else what is wrong.
std::string type_error(const ServeKey& k, const std::string& value) {
  int64_t i = 0;
  double d = 0;
  switch (k.kind) {
    case Kind::Int: return parse_int(value, i) ? "" : "expected a whole number";
    case Kind::Count: return parse_int(value, i) && i >= 0 ? "" : "expected a whole number >= 0";
    case Kind::Number: return parse_number(value, d) && std::isfinite(d) ? "" : "expected a finite number";
    case Kind::Bool:
    case Kind::NegBool: return value == "true" || value == "false" ? "" : "expected true or false";
    case Kind::Text:
    case Kind::Path: return value.empty() ? "expected a non-empty value" : "";
  }
  return "";
}

// A path in the sweep file is looked up next to the sweep file first (as workloads are).
std::string near_file(const std::string& base_dir, const std::string& p) {
  std::error_code ec;
  fs::path cand = fs::path(base_dir) / p;
  if (fs::path(p).is_relative() && fs::is_regular_file(cand, ec)) return fs::absolute(cand).lexically_normal().string();
  return fs::absolute(p).lexically_normal().string();
}

// read_trace's verdict on a file, once per path and modification time: a sweep's values and
// combinations name the same trace again and again.
void check_trace(const std::string& path) {
  static std::map<std::pair<std::string, int64_t>, std::string> seen;
  std::error_code ec;
  const auto stamp = fs::last_write_time(path, ec).time_since_epoch().count();
  const auto key = std::make_pair(path, ec ? int64_t{-1} : static_cast<int64_t>(stamp));
  auto it = seen.find(key);
  if (it == seen.end()) {
    std::string error;
    try {
      serve::read_trace(path);
    } catch (const InputError& e) {
      error = e.what();
    }
    it = seen.emplace(key, error).first;
  }
  if (!it->second.empty()) throw InputError(it->second);
}

class Values {
 public:
  explicit Values(const std::map<std::string, std::string>& v) : v_(v) {}
  bool has(const char* k) const { return v_.count(k) != 0; }
  std::string text(const char* k, const std::string& dflt) const { return has(k) ? v_.at(k) : dflt; }
  int64_t integer(const char* k, int64_t dflt) const {
    int64_t i = dflt;
    if (has(k)) parse_int(v_.at(k), i);
    return i;
  }
  double number(const char* k, double dflt) const {
    double d = dflt;
    if (has(k)) parse_number(v_.at(k), d);
    return d;
  }
  bool flag(const char* k, bool dflt) const { return has(k) ? v_.at(k) == "true" : dflt; }

 private:
  const std::map<std::string, std::string>& v_;
};

// The generator's own checks (rate, request count, arrival and length specs), on one request:
// the count is checked, not drawn.
void check_generator(const Values& v) {
  serve::GeneratorSpec g;
  g.requests = std::min<int64_t>(v.integer("requests", g.requests), 1);
  g.seed = static_cast<uint64_t>(v.integer("seed", 1));
  g.arrival = serve::parse_arrival_spec(v.text("arrivals", "poisson"), v.number("rate", 1), "--arrivals");
  if (v.has("prompt")) g.prompt = serve::parse_length_spec(v.text("prompt", ""), "--prompt");
  if (v.has("output")) g.output = serve::parse_length_spec(v.text("output", ""), "--output");
  serve::generate_requests(g);
}

// The checks `lpu serve` makes before it plans a deployment (servesim/serve_job.cpp does these
// three itself; the rest are the serve layer's validate_serving).
void check_job_options(const Values& v) {
  if (int64_t p = v.integer("prefill_replicas", 0); p < 0)
    throw InputError(strcat("--prefill-replicas: expected >= 0, got ", p));
  if (int64_t e = v.integer("error_samples", 8); e < 0)
    throw InputError(strcat("--error-samples: expected >= 0, got ", e));
  if (v.flag("find_rate", false) && v.has("trace_file"))
    throw InputError("--find-rate: searches arrival rates of the generator; a trace file (--trace-file) has its own");
}

// A step-cost model is required by the pool checks; nothing is priced here.
class NoCost : public serve::StepCostModel {
 public:
  serve::StepCost cost(const serve::StepBatch&) override { return {}; }
};

void check_cluster(const Values& v) {
  static NoCost no_cost;
  serve::SchedulerConfig sc;
  sc.max_num_batched_tokens = v.integer("max_batched_tokens", sc.max_num_batched_tokens);
  sc.max_num_seqs = v.integer("max_seqs", sc.max_num_seqs);
  sc.chunked_prefill = v.flag("chunked_prefill", true);
  sc.chunk_size = v.integer("chunk_size", sc.chunk_size);
  sc.block_size = v.integer("block_size", sc.block_size);
  sc.kv_capacity_blocks = std::numeric_limits<int64_t>::max() / 2;  // the deployment's, known per point
  serve::ClusterConfig c;
  const int64_t prefill = v.integer("prefill_replicas", 0), replicas = v.integer("replicas", 1);
  c.pool = {prefill > 0 ? prefill : replicas, sc, &no_cost};
  c.disaggregated = prefill > 0;
  if (c.disaggregated) c.decode_pool = {replicas, sc, &no_cost};
  c.link.bandwidth_gbps = v.number("link_gbps", c.link.bandwidth_gbps);
  c.link.latency_us = v.number("link_latency_us", c.link.latency_us);
  c.router = serve::parse_router(v.text("router", "round-robin"));
  c.slo.ttft_ms = v.number("slo_ttft_ms", c.slo.ttft_ms);
  c.slo.tpot_ms = v.number("slo_tpot_ms", c.slo.tpot_ms);
  serve::Request one;
  one.prompt_tokens = 1;
  one.output_tokens = 1;
  serve::validate_serving({one}, c);
}

}  // namespace

bool is_serve_key(const std::string& key) { return key.rfind(kServeKeyPrefix, 0) == 0; }

std::string serve_key_names() {
  std::string out;
  for (const ServeKey& k : kKeys) out += strcat(out.empty() ? "" : ", ", kServeKeyPrefix, k.name);
  return out;
}

std::string unknown_serve_key(const std::string& key) {
  if (find_key(key)) return "";
  return strcat("unknown serving key '", key, "'; expected one of: ", serve_key_names());
}

std::string check_serve_assignments(const std::vector<std::string>& assignments, const std::string& base_dir) {
  std::map<std::string, std::string> values;
  for (const auto& a : assignments) {
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    const ServeKey* k = find_key(key);
    if (!k) return unknown_serve_key(key);
    if (std::string e = type_error(*k, value); !e.empty()) return strcat(key, ": ", e, ", got '", value, "'");
    values[k->name] = value;
  }
  const Values v(values);
  try {
    check_job_options(v);
    if (v.has("trace_file"))
      check_trace(near_file(base_dir, v.text("trace_file", "")));
    else
      check_generator(v);
    check_cluster(v);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> serve_flags(const std::vector<std::string>& assignments, const std::string& base_dir) {
  std::vector<std::string> argv;
  for (const auto& a : assignments) {
    const size_t eq = a.find('=');
    const ServeKey* k = find_key(a.substr(0, eq));
    if (!k || eq == std::string::npos) continue;
    const std::string value = a.substr(eq + 1);
    if (k->kind == Kind::Bool || k->kind == Kind::NegBool) {
      if (value == (k->kind == Kind::Bool ? "true" : "false")) argv.push_back(k->flag);
      continue;
    }
    argv.insert(argv.end(), {k->flag, k->kind == Kind::Path ? near_file(base_dir, value) : value});
  }
  return argv;
}

}  // namespace lpu
