#include "servesim/sim_step_cost.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <tuple>

#include "process/proc.h"
#include "servesim/step_workload.h"
#include "support/error.h"
#include "support/input_file.h"
#include "workload/transformer.h"

namespace lpu {
namespace fs = std::filesystem;

serve::StepCost ExactStepCost::cost(const serve::StepBatch& batch) {
  ++steps_;
  const WorkloadSpec step = step_workload_of(base_, batch);
  StepFigures f = in_sequence_ ? runner_.run_in_sequence(step) : runner_.run(step);
  return {f.latency_s, f.energy_j};
}

namespace {

// The compiler's version: a hash of the running executable (the same sources built alike give
// the same bytes; any change to the compiler or the simulator changes them).
std::string executable_hash() {
  static const std::string h = [] {
    std::ifstream in(self_exe(), std::ios::binary);
    uint64_t x = 1469598103934665603ull;  // FNV-1a
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        x ^= static_cast<unsigned char>(buf[i]);
        x *= 1099511628211ull;
      }
      if (!in) break;
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(x));
    return std::string(out);
  }();
  return h;
}

// s - k one-token sequences on a one-token cache (decodes: they always have one) and k
// sequences sharing m + k - 1 tokens evenly on empty caches (the first ones one more when it
// does not divide): N = m + s - 1 tokens in all.
serve::StepBatch probe_z(int64_t m, int64_t s, int64_t k) {
  serve::StepBatch b;
  for (int64_t i = 0; i < s - k; ++i) b.seqs.push_back({i, 1, 1, false});
  const int64_t tokens = m + k - 1;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t n = tokens / k + (j < tokens % k ? 1 : 0);
    b.seqs.push_back({s - k + j, 0, n, true});
  }
  return b;
}

double lerp(double a, double b, double t) { return a + (b - a) * t; }

}  // namespace

std::string step_cost_cache_key(const WorkloadSpec& base, const ArchConfig& arch, const std::string& fusion) {
  const TransformerShape* m = decoder_of(base);
  return strcat(
      "model=", m ? describe_decoder(*m) : base.model, ";layers=", base.layers, ";dtype=", dtype_name(base.dtype),
      base.weight_quant.on() ? ";weights=" + quant_str(base.weight_quant) : "",
      base.moe_parallel == WorkloadSpec::MoeParallel::Expert ? strcat(";moe=expert/", base.expert_capacity) : "",
      ";fusion=", fusion, ";arch=", arch_to_json(arch).dump(), ";lpu=", executable_hash());
}

const std::vector<int64_t>& FittedStepCost::token_grid() {
  static const std::vector<int64_t> g = [] {
    std::vector<int64_t> v = {1, 2, 3};
    for (int64_t p = 4; p <= (int64_t{1} << 24); p *= 2) {
      v.push_back(p);
      v.push_back(p + p / 2);
    }
    return v;
  }();
  return g;
}

std::pair<int64_t, int64_t> FittedStepCost::bracket_tokens(int64_t x) {
  const auto& g = token_grid();
  auto it = std::lower_bound(g.begin(), g.end(), x);
  if (it == g.end()) throw InternalError(strcat("step cost: ", x, " tokens is past the grid"));
  if (*it == x || it == g.begin()) return {*it, *it};
  return {*std::prev(it), *it};
}

FittedStepCost::FittedStepCost(const WorkloadSpec& base, StepRunner& runner, std::string key, FittedStepCostOptions o)
    : base_(base), runner_(runner), key_(std::move(key)), o_(std::move(o)) {
  if (o_.context_step < 1) throw InputError(strcat("step cost: context_step ", o_.context_step, " is not >= 1"));
  if (o_.cache_file.empty()) return;
  // The memo is replaced by a rename: a device, FIFO or directory there would be replaced (as
  // root, `--cost-cache /dev/null` made /dev/null a regular file) or would block the read.
  if (std::string what = not_a_regular_file(o_.cache_file); !what.empty())
    throw InputError(strcat("--cost-cache ", o_.cache_file, ": ", what, " (the memo is a JSON file)"));
  std::ifstream in(o_.cache_file, std::ios::binary);
  if (!in) return;  // no memo yet
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return;  // an empty file: a new memo
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  // save() replaces the file: one that is not a memo (a mistyped path to some other file) is the
  // user's, and must not be overwritten. A memo of another model, architecture or build is
  // ignored and rewritten.
  if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("points") ||
      !j["points"].is_object())
    throw InputError(strcat("--cost-cache ", o_.cache_file, ": exists and is not a step-cost memo (expected a JSON ",
                            "object with \"key\" and \"points\", as serve writes; found ", describe_contents(bytes),
                            "): refusing to overwrite it: give a new path, or remove the file"));
  if (j["key"].get<std::string>() != key_) return;
  for (const auto& [k, v] : j["points"].items()) {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) continue;
    points_[k] = {v[0].get<double>(), v[1].get<double>()};
  }
  loaded_ = points_.size();
}

bool FittedStepCost::save(std::string* error) const {
  if (o_.cache_file.empty()) return true;
  nlohmann::ordered_json j;
  j["key"] = key_;
  nlohmann::ordered_json pts = nlohmann::ordered_json::object();
  for (const auto& [k, p] : points_) pts[k] = {p.time_s, p.energy_j};
  j["points"] = std::move(pts);
  const std::string tmp = o_.cache_file + ".tmp";
  if (const fs::path dir = fs::path(o_.cache_file).parent_path(); !dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);  // as the other output files are written (a failure shows below)
  }
  {
    std::ofstream out(tmp);
    out << j.dump() << "\n";
    if (!out) {
      if (error) *error = strcat("cannot write ", tmp);
      return false;
    }
  }
  if (std::rename(tmp.c_str(), o_.cache_file.c_str()) != 0) {
    if (error) *error = strcat("cannot rename ", tmp, " to ", o_.cache_file);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

FittedStepCost::Point FittedStepCost::simulate(const serve::StepBatch& b, const std::string& point_key) {
  auto it = points_.find(point_key);
  if (it != points_.end()) return it->second;
  auto t0 = std::chrono::steady_clock::now();
  StepFigures f = runner_.run_by_layers(step_workload_of(base_, b));
  ++simulated_;
  if (std::getenv("LPU_STEPCOST_LOG"))
    std::fprintf(stderr, "[stepcost] %s %.3f s\n", point_key.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  points_[point_key] = {f.latency_s, f.energy_j};
  if (simulated_ % 16 == 0) save();  // a run stopped early keeps most of what it simulated
  return points_[point_key];
}

FittedStepCost::Point FittedStepCost::z(int64_t m, int64_t s, int64_t k) {
  return simulate(probe_z(m, s, k), strcat("z:", m, ":", s, ":", k));
}

FittedStepCost::Point FittedStepCost::e(int64_t c, int64_t n) {
  if (c == 0 && n > 1) return z(n, 1, 1);  // the same steps
  if (c == 1 && n == 1) return z(1, 1, 0);
  serve::StepBatch b;
  b.seqs.push_back({0, c, n, c == 0});
  return simulate(b, strcat("e:", c, ":", n));
}

FittedStepCost::Point FittedStepCost::z_interpolated(int64_t m, int64_t s, int64_t k) {
  // Grid points below what k chunks need (s >= k sequences, m >= k + 1 tokens: a chunk has
  // two tokens or more) are clamped:
  // the step itself satisfies both, so it still lies between the points.
  // Plain variables, not structured bindings: clang 14 cannot capture bindings in a lambda.
  int64_t m0 = 0, m1 = 0, s0 = 0, s1 = 0;
  std::tie(m0, m1) = bracket_tokens(m);
  std::tie(s0, s1) = bracket_tokens(s);
  if (k > 0) m0 = std::max(m0, k + 1), s0 = std::max(s0, k);
  auto in_m = [&](int64_t sg) {
    Point a = z(m0, sg, k);
    if (m0 == m1) return a;
    Point b = z(m1, sg, k);
    const double t = static_cast<double>(m - m0) / static_cast<double>(m1 - m0);
    return Point{lerp(a.time_s, b.time_s, t), lerp(a.energy_j, b.energy_j, t)};
  };
  Point a = in_m(s0);
  if (s0 == s1) return a;
  Point b = in_m(s1);
  const double t = static_cast<double>(s - s0) / static_cast<double>(s1 - s0);
  return {lerp(a.time_s, b.time_s, t), lerp(a.energy_j, b.energy_j, t)};
}

FittedStepCost::Point FittedStepCost::prefill(double n) {
  const auto whole = static_cast<int64_t>(std::floor(n));
  auto [n0, n1] = bracket_tokens(std::max<int64_t>(whole, 1));
  if (n > static_cast<double>(n1)) n1 = bracket_tokens(n1 + 1).second;  // n between n1 and the next point
  Point a = z(n0, 1, 1);
  if (n0 == n1) return a;
  Point b = z(n1, 1, 1);
  const double t = (n - static_cast<double>(n0)) / static_cast<double>(n1 - n0);
  return {lerp(a.time_s, b.time_s, t), lerp(a.energy_j, b.energy_j, t)};
}

FittedStepCost::Point FittedStepCost::context_growth(int64_t c, int64_t n) {
  // From the probe's context: 1 for a decode, 0 for a chunk.
  const int64_t base = n == 1 ? 1 : 0;
  if (c == base) return {};
  if (n == 1 && c < static_cast<int64_t>(decode_growth_set_.size()) && decode_growth_set_[c]) return decode_growth_[c];
  auto diff = [](Point a, Point b) { return Point{a.time_s - b.time_s, a.energy_j - b.energy_j}; };
  if (c == 0) return diff(e(0, 1), e(1, 1));  // a one-token prompt: no cache at all
  // Grid: 1, 2, 4, ... below `step`, then every `step`. A step with any cached context has the
  // cache's kernels (a jump from c = 0 to 1), and short contexts grow in tile-sized jumps that
  // are large beside their cost: powers of two follow them where a straight line would not.
  const int64_t step = o_.context_step;
  int64_t c0 = c / step * step, c1 = c0 + step;
  if (c < step) {
    c0 = 1;
    while (c0 * 2 <= c) c0 *= 2;
    c1 = std::min(c0 * 2, step);
  }
  const auto [n0, n1] = bracket_tokens(n);
  auto at_n = [&](int64_t ng) {
    const int64_t b = ng == 1 ? 1 : 0;
    auto growth = [&](int64_t cg) { return cg == b ? Point{} : diff(e(cg, ng), e(b, ng)); };
    Point a = growth(c0);
    if (c0 == c) return a;
    Point g = growth(c1);
    const double t = static_cast<double>(c - c0) / static_cast<double>(c1 - c0);
    return Point{lerp(a.time_s, g.time_s, t), lerp(a.energy_j, g.energy_j, t)};
  };
  Point r = at_n(n0);
  if (n0 != n1) {
    Point b = at_n(n1);
    const double t = static_cast<double>(n - n0) / static_cast<double>(n1 - n0);
    r = {lerp(r.time_s, b.time_s, t), lerp(r.energy_j, b.energy_j, t)};
  }
  if (n == 1) {
    if (c >= static_cast<int64_t>(decode_growth_set_.size())) {
      decode_growth_.resize(c + 1);
      decode_growth_set_.resize(c + 1);
    }
    decode_growth_[c] = r;
    decode_growth_set_[c] = true;
  }
  return r;
}

serve::StepCost FittedStepCost::cost(const serve::StepBatch& batch) {
  const auto s = static_cast<int64_t>(batch.seqs.size());
  if (s == 0) return {};
  const int64_t m = batch.total_tokens() - s + 1;
  int64_t k = 0;
  for (const serve::SeqWork& q : batch.seqs) k += q.new_tokens > 1;
  Point p = z_interpolated(m, s, k);
  auto add = [&p](Point g, double sign) {
    p.time_s += sign * g.time_s;
    p.energy_j += sign * g.energy_j;
  };
  // The probe's chunks are even; the step's differ: the difference of their prefills (their
  // attention within the chunk; the rest of a prefill is near affine in its tokens and cancels).
  if (k > 1) {
    const double even = static_cast<double>(m + k - 1) / static_cast<double>(k);
    const Point pe = prefill(even);
    for (const serve::SeqWork& q : batch.seqs)
      if (q.new_tokens > 1) add(prefill(static_cast<double>(q.new_tokens)), 1), add(pe, -1);
  }
  for (const serve::SeqWork& q : batch.seqs) add(context_growth(q.context_before, q.new_tokens), 1);
  return {p.time_s, p.energy_j};
}

}  // namespace lpu
