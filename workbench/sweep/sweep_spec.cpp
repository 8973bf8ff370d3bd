#include "sweep/sweep_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/arch_config.h"
#include "policy_registry.h"
#include "support/error.h"
#include "support/yaml_util.h"
#include "sweep/sweep_serve.h"
#include "workload/workload.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

constexpr size_t kMaxAxisValues = 10000;
constexpr size_t kMaxPoints = 1000000;
constexpr size_t kMaxWorkloadRef = 4096;  // PATH_MAX: a longer name or path names no file
// Axis combinations checked against the config while the file loads (validate_points).
constexpr size_t kMaxCombinationsChecked = 4096;

bool parse_int(const std::string& s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

bool is_int_key(const YAML::Node& m, const char* key) {
  int64_t v;
  return !m[key] || (m[key].IsScalar() && parse_int(m[key].Scalar(), v));
}

// {start, stop, step} | {start, stop, num[, scale: linear|log]} | {start, stop, factor}.
// Integer endpoints (and step/factor) give integer values; num ranges round to integers then.
std::vector<std::string> expand_range(const YamlReader& r, const YAML::Node& m, const std::string& path) {
  r.check_keys(m, path, {"start", "stop", "step", "num", "factor", "scale"});
  double start = r.get_double(m, "start", path);
  double stop = r.get_double(m, "stop", path);
  int kinds = (m["step"] ? 1 : 0) + (m["num"] ? 1 : 0) + (m["factor"] ? 1 : 0);
  if (kinds != 1) r.fail(m, path, "a range needs exactly one of step, num or factor");
  if (m["scale"] && !m["num"]) r.fail(m["scale"], path + ".scale", "scale applies to {start, stop, num} ranges only");
  bool ints = is_int_key(m, "start") && is_int_key(m, "stop") && is_int_key(m, "step") && is_int_key(m, "factor");
  auto too_many = [&](const YAML::Node& at) {
    r.fail(at, path, strcat("range has more than ", kMaxAxisValues, " values"));
  };
  std::vector<double> v;
  if (m["step"]) {
    double step = r.get_double(m, "step", path);
    if (step == 0 || (stop - start) * step < 0)
      r.fail(m["step"], path + ".step", strcat("step ", step, " never gets from ", start, " to ", stop));
    double n = std::floor((stop - start) / step + 1e-9) + 1;
    if (n > static_cast<double>(kMaxAxisValues)) too_many(m["step"]);
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) v.push_back(start + static_cast<double>(i) * step);
  } else if (m["num"]) {
    int64_t num = r.get_int(m, "num", path);
    r.check_range(m, "num", path, static_cast<double>(num), 1, kMaxAxisValues);
    std::string scale = r.get_string(m, "scale", path, "linear");
    if (scale != "linear" && scale != "log")
      r.fail(m["scale"], path + ".scale", "expected linear or log, got '" + scale + "'");
    if (scale == "log" && (start <= 0 || stop <= 0)) r.fail(m, path, "a log range needs start > 0 and stop > 0");
    for (int64_t i = 0; i < num; ++i) {
      double t = num == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(num - 1);
      v.push_back(scale == "log" ? start * std::pow(stop / start, t) : start + t * (stop - start));
    }
  } else {
    double f = r.get_double(m, "factor", path);
    if (start <= 0 || stop < start || f <= 1)
      r.fail(m, path, "a factor range needs 0 < start <= stop and factor > 1");
    for (double x = start; x <= stop * (1 + 1e-9); x *= f) {
      if (v.size() >= kMaxAxisValues) too_many(m["factor"]);
      v.push_back(x);
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (double x : v) {
    std::string s = ints ? std::to_string(std::llround(x)) : format_number(x);
    if (!seen.insert(s).second)
      r.fail(m, path, strcat("the range repeats the value ", s, " (integer endpoints round to integers); use fewer points"));
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> axis_values(const YamlReader& r, const YAML::Node& n, const std::string& path) {
  if (n.IsMap()) return expand_range(r, n, path);
  std::vector<std::string> out;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    std::set<std::string> seen;
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) r.fail(n[i], strcat(path, "[", i, "]"), "expected a scalar value");
      if (!seen.insert(n[i].Scalar()).second) r.fail(n[i], strcat(path, "[", i, "]"), "value listed twice: " + n[i].Scalar());
      out.push_back(n[i].Scalar());
    }
  } else {
    r.fail(n, path, "expected a list of values or a range {start, stop, step|num|factor}");
  }
  if (out.empty()) r.fail(n, path, "no values");
  if (out.size() > kMaxAxisValues) r.fail(n, path, strcat("more than ", kMaxAxisValues, " values"));
  return out;
}

// A list of scalars, or one scalar.
std::vector<std::pair<std::string, YAML::Node>> scalar_list(const YamlReader& r, const YAML::Node& n,
                                                            const std::string& path) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  if (n.IsScalar()) return {{n.Scalar(), n}};
  if (!n.IsSequence() || n.size() == 0) r.fail(n, path, "expected a non-empty list");
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) r.fail(n[i], strcat(path, "[", i, "]"), "expected a name");
    out.push_back({n[i].Scalar(), n[i]});
  }
  return out;
}

// `set:` may be flat (hbm.latency_ns: 80) or nested (hbm: {latency_ns: 80}).
void flatten_sets(const YamlReader& r, const YAML::Node& n, const std::string& path,
                  std::vector<std::pair<std::string, YAML::Node>>& out) {
  r.require_map(n, path.empty() ? "set" : path);
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string key = join_path(path, it->first.as<std::string>());
    if (it->second.IsMap()) flatten_sets(r, it->second, key, out);
    else if (it->second.IsScalar()) out.push_back({key, it->second});
    else r.fail(it->second, "set." + key, "expected a scalar value");
  }
}

// A path in the sweep file is looked up next to the sweep file first, then as usual.
std::string near_file(const std::string& base_dir, const std::string& p) {
  fs::path cand = fs::path(base_dir) / p;
  std::error_code ec;  // a name too long for the filesystem is just not there
  if (fs::path(p).is_relative() && fs::is_regular_file(cand, ec)) return cand.string();
  if (fs::path(p).is_relative() && fs::is_regular_file(cand.string() + ".yaml", ec)) return cand.string() + ".yaml";
  return p;
}

// The arch loader's message starts with the base file's name and line, which mean nothing
// to the sweep's author: keep only "key: message".
std::string strip_location(const std::string& msg, const std::string& file) {
  if (msg.rfind(file, 0) != 0) return msg;
  size_t pos = msg.find(": ", file.size());
  return pos == std::string::npos ? msg : msg.substr(pos + 2);
}

// The assignments that set config keys: `set:` may also hold workload.* and serve.* keys,
// which the config does not know.
std::vector<std::string> arch_sets(const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  for (const auto& a : sets)
    if (a.rfind(kWorkloadKeyPrefix, 0) != 0 && !is_serve_key(a)) out.push_back(a);
  return out;
}

void validate_points(const SweepSpec& s, const YamlReader& r, const YAML::Node& root,
                     const std::vector<std::pair<std::string, YAML::Node>>& set_nodes) {
  std::ifstream f(s.base);
  std::stringstream text;
  text << f.rdbuf();
  // The base is parsed once for the up to 2 + sum(axis values) + kMaxCombinationsChecked
  // loads below (each of which parsed it again before: a 10^4-value axis took 2 * 10^4 parses),
  // and the checks of one axis's values, or of the combinations, share one copy of it.
  const PreparsedArchConfig base(text.str(), s.base);
  // Assignment lists already accepted: a one-axis sweep's combinations are its values, and a
  // one-key `set:` is its own base_sets; each is checked once.
  std::set<std::vector<std::string>> accepted;
  // `workload.KEY=VALUE` assignments set a workload key (docs/workloads.md): checked by
  // loading every workload with them; the rest by loading the base config.
  const std::string wprefix = kWorkloadKeyPrefix;
  // `serve.KEY=VALUE` assignments are `lpu serve` flags (sweep_serve.h): checked together by the
  // serve layer's checks. `by` names who rejected the last failing load, for the message.
  std::string by;
  // `fixed` then `varying`: successive checks that assign the same keys in `varying` (an
  // axis's values, the combinations) reuse one copy of the base (PreparsedArchConfig::load).
  auto try_load = [&](const std::vector<std::string>& fixed, const std::vector<std::string>& varying) -> std::string {
    std::vector<std::string> sets = fixed;
    sets.insert(sets.end(), varying.begin(), varying.end());
    if (accepted.count(sets)) return "";
    std::vector<std::string> arch_fixed, arch_varying, workload_sets, serve_sets;
    for (size_t i = 0; i < sets.size(); ++i)
      if (sets[i].rfind(wprefix, 0) == 0) workload_sets.push_back(sets[i].substr(wprefix.size()));
      else if (is_serve_key(sets[i]))
        serve_sets.push_back(sets[i]);
      else (i < fixed.size() ? arch_fixed : arch_varying).push_back(sets[i]);
    by = "lpu serve";
    if (std::string e = serve_sets.empty() ? "" : check_serve_assignments(serve_sets, s.base_dir); !e.empty()) return e;
    by = "the config";
    try {
      base.load(arch_fixed, arch_varying);
    } catch (const InputError& e) {
      return strip_location(e.what(), s.base);
    }
    if (!workload_sets.empty())
      for (const auto& w : s.workloads) try {
          resolve_workload(w.file, workload_sets);
        } catch (const InputError& e) {
          return strcat("workload ", w.name, ": ", e.what());
        }
    accepted.insert(sets);
    return "";
  };
  // The config names a failing override "--set K=V: ..."; where the sweep's own message
  // already names the key and the value, that prefix is dropped.
  auto without_override = [](const std::string& e, const std::string& assignment) {
    std::string prefix = "--set " + assignment + ": ";
    return e.rfind(prefix, 0) == 0 ? e.substr(prefix.size()) : e;
  };
  for (const auto& [key, node] : set_nodes)
    if (std::string e = try_load({}, {key + "=" + node.Scalar()}); !e.empty())
      r.fail(node, "set." + key, strcat("rejected by ", by, ": ", without_override(e, key + "=" + node.Scalar())));
  if (std::string e = try_load(s.base_sets, {}); !e.empty())
    r.fail(root["set"] ? root["set"] : root, root["set"] ? "set" : "base", strcat("rejected by ", by, ": ", e));
  // Each value alone first, so the message points at the value's own line.
  YAML::Node axes = root["axes"];
  for (const auto& a : s.axes)
    for (const auto& v : a.values)
      if (std::string e = try_load(s.base_sets, {a.key + "=" + v}); !e.empty())
        r.fail(axes[a.key], "axes." + a.key,
               strcat("value ", v, " rejected by ", by, ": ", without_override(e, a.key + "=" + v)));
  // Then the combinations, up to kMaxCombinationsChecked: a config load takes tens of
  // microseconds, so checking all 10^6 combinations of the largest sweep would take about a
  // minute before any point runs. Beyond the bound a rejected combination is caught where it
  // runs: that point fails with the config's message in its error column.
  std::vector<std::vector<std::string>> combos = arch_points(s);
  if (combos.size() > kMaxCombinationsChecked) return;
  for (const auto& pt : combos) {
    std::vector<std::string> sets;
    std::string combo;
    for (size_t i = 0; i < s.axes.size(); ++i) {
      sets.push_back(s.axes[i].key + "=" + pt[i]);
      combo += (combo.empty() ? "" : ", ") + sets.back();
    }
    if (std::string e = try_load(s.base_sets, sets); !e.empty())
      r.fail(axes, "axes", strcat("the combination ", combo, " is rejected by ", by, ": ", e));
  }
}

// A `serve.KEY` is an `lpu serve` flag: only in a serving sweep, and only a flag there is.
void check_serve_key(const YamlReader& r, const SweepSpec& s, const YAML::Node& at, const std::string& path,
                     const std::string& key) {
  if (!is_serve_key(key)) return;
  if (!s.serving()) r.fail(at, path, "serving keys need `command: serve` (the points of this sweep run `lpu run`)");
  if (std::string e = unknown_serve_key(key); !e.empty()) r.fail(at, path, e);
}

void resolve_workloads(const YamlReader& r, const YAML::Node& root, SweepSpec& s) {
  if (!root["workloads"]) r.fail(root, "workloads", "missing required key");
  std::set<std::string> names;
  size_t i = 0;
  for (const auto& [w, node] : scalar_list(r, root["workloads"], "workloads")) {
    std::string path = strcat("workloads[", i++, "]");
    if (w.size() > kMaxWorkloadRef)
      r.fail(node, path, strcat("a workload name or path of ", w.size(), " bytes; at most ", kMaxWorkloadRef));
    WorkloadSpec spec;
    try {
      spec = resolve_workload(near_file(s.base_dir, w));
    } catch (const InputError& e) {
      r.fail(node, path, e.what());
    }
    if (!names.insert(spec.name).second) r.fail(node, path, "two workloads are named '" + spec.name + "'");
    if (s.serving() && !decoder_of(spec))
      r.fail(node, path, strcat("workload ", spec.name, " is not a built-in LLM (a serving sweep runs decoders)"));
    // A built-in model named without a file (`tiny-llama`) has no path: its points run it by
    // name (`lpu run NAME`), and the sweep hash covers the name.
    s.workloads.push_back(
        {spec.name, spec.file.empty() ? spec.name : fs::absolute(spec.file).lexically_normal().string()});
  }
}

// `fusion:` is required, except in a serving sweep (`lpu serve` prices steps with greedy).
void resolve_policies(const YamlReader& r, const YAML::Node& root, SweepSpec& s) {
  if (!root["fusion"] && s.serving()) {
    s.policies = {"greedy"};
    return;
  }
  if (!root["fusion"]) r.fail(root, "fusion", "missing required key");
  size_t i = 0;
  for (const auto& [p, node] : scalar_list(r, root["fusion"], "fusion")) {
    std::string path = strcat("fusion[", i++, "]");
    // The one registry (tuner/policy_registry.h): a tuner policy runs as `lpu run --fusion
    // search` in its point like any other, so every registered policy is accepted.
    const PolicyInfo* policy = find_policy(p);
    if (!policy) r.fail(node, path, strcat("unknown fusion policy '", p, "'; expected one of: ", policy_names(", ")));
    if (s.serving() && policy->simulates)
      r.fail(node, path,
             strcat("'", p,
                    "': serving prices every step with a fixed policy (greedy, none); the tuner's search "
                    "simulates its candidates for each compile"));
    if (std::find(s.policies.begin(), s.policies.end(), p) != s.policies.end()) r.fail(node, path, "listed twice: " + p);
    s.policies.push_back(p);
  }
}

// `command`, `combine` and `traces`: the scalar settings of the sweep.
void resolve_settings(const YamlReader& r, const YAML::Node& root, SweepSpec& s) {
  s.command = r.get_string(root, "command", "", "run");
  if (s.command != "run" && s.command != "serve")
    r.fail(root["command"], "command", "expected run or serve, got '" + s.command + "'");
  std::string combine = r.get_string(root, "combine", "", "product");
  if (combine != "product" && combine != "zip") r.fail(root["combine"], "combine", "expected product or zip, got '" + combine + "'");
  s.zip = combine == "zip";
  // `lpu serve` writes no per-point trace: a serving sweep records none.
  s.traces = r.get_string(root, "traces", "", s.serving() ? "none" : "reference");
  if (s.traces != "reference" && s.traces != "all" && s.traces != "none")
    r.fail(root["traces"], "traces", "expected reference, all or none, got '" + s.traces + "'");
  if (s.serving() && s.traces != "none")
    r.fail(root["traces"], "traces", "a serving sweep records no traces (`lpu serve` writes none): use none");
}

void resolve_axes(const YamlReader& r, const YAML::Node& root, const std::set<std::string>& fixed, SweepSpec& s) {
  YAML::Node axes = root["axes"];
  if (!axes || axes.IsNull()) return;
  r.require_map(axes, "axes");
  static const std::set<std::string> reserved = {"point_id", "status", "exit_code", "error",
                                                 "workload", "fusion", "wall_s",    "trace"};
  for (auto it = axes.begin(); it != axes.end(); ++it) {
    SweepAxis a;
    a.key = it->first.as<std::string>();
    a.line = it->first.Mark().line + 1;
    std::string path = "axes." + a.key;
    if (reserved.count(a.key)) r.fail(it->first, path, "this name is a results column, not a config key");
    if (fixed.count(a.key)) r.fail(it->first, path, "the key is also fixed in set:");
    check_serve_key(r, s, it->first, path, a.key);
    a.values = axis_values(r, it->second, path);
    s.axes.push_back(std::move(a));
  }
}

SweepSpec resolve(const YamlDoc& doc, const std::string& base_dir) {
  YamlReader r(doc);
  const YAML::Node& root = doc.root;
  r.check_keys(root, "",
               {"name", "description", "command", "base", "set", "workloads", "fusion", "combine", "axes", "traces"});
  SweepSpec s;
  s.file = doc.file;
  s.base_dir = base_dir;
  s.name = r.get_string(root, "name", "", fs::path(doc.file).stem().string());
  s.description = r.get_string(root, "description", "", "");
  resolve_settings(r, root, s);

  std::string base = r.get_string(root, "base", "", default_config_name());
  try {
    s.base = fs::absolute(resolve_config_path(near_file(base_dir, base))).lexically_normal().string();
  } catch (const InputError& e) {
    r.fail(root["base"] ? root["base"] : root, "base", e.what());
  }

  std::set<std::string> fixed;
  std::vector<std::pair<std::string, YAML::Node>> kv;
  if (YAML::Node set = root["set"]) {
    flatten_sets(r, set, "", kv);
    for (const auto& [k, v] : kv) {
      check_serve_key(r, s, v, "set." + k, k);
      s.base_sets.push_back(k + "=" + v.Scalar());
      fixed.insert(k);
    }
  }
  resolve_workloads(r, root, s);
  resolve_policies(r, root, s);
  resolve_axes(r, root, fixed, s);
  if (s.zip)
    for (const auto& a : s.axes)
      if (a.values.size() != s.axes.front().values.size())
        r.fail(root["axes"][a.key], "axes." + a.key,
               strcat("has ", a.values.size(), " values but axes.", s.axes.front().key, " has ",
                      s.axes.front().values.size(), "; combine: zip needs the same number"));
  double total = static_cast<double>(s.workloads.size() * s.policies.size());
  for (const auto& a : s.axes) total *= s.zip ? 1.0 : static_cast<double>(a.values.size());
  if (s.zip && !s.axes.empty()) total *= static_cast<double>(s.axes.front().values.size());
  if (total > static_cast<double>(kMaxPoints))
    r.fail(root["axes"], "axes", strcat("the sweep has ", total, " points; the limit is ", kMaxPoints));
  validate_points(s, r, root, kv);
  return s;
}

}  // namespace

SweepSpec load_sweep_string(const std::string& yaml, const std::string& name, const std::string& base_dir) {
  YamlDoc doc = load_yaml_string(yaml, name);
  if (!doc.root || doc.root.IsNull()) throw InputError(name + ": empty sweep file");
  return resolve(doc, base_dir);
}

SweepSpec load_sweep_file(const std::string& path) {
  YamlDoc doc = load_yaml_file(path);
  if (!doc.root || doc.root.IsNull()) throw InputError(path + ": empty sweep file");
  return resolve(doc, fs::path(path).parent_path().string());
}

std::vector<std::vector<std::string>> arch_points(const SweepSpec& s) {
  std::vector<std::vector<std::string>> out;
  if (s.axes.empty()) return {{}};
  if (s.zip) {
    for (size_t i = 0; i < s.axes.front().values.size(); ++i) {
      std::vector<std::string> p;
      for (const auto& a : s.axes) p.push_back(a.values[i]);
      out.push_back(p);
    }
    return out;
  }
  // Odometer over the axes, the last axis changing fastest.
  std::vector<size_t> idx(s.axes.size(), 0);
  while (true) {
    std::vector<std::string> p;
    for (size_t i = 0; i < s.axes.size(); ++i) p.push_back(s.axes[i].values[idx[i]]);
    out.push_back(p);
    size_t k = s.axes.size();
    while (k > 0 && ++idx[k - 1] == s.axes[k - 1].values.size()) idx[--k] = 0;
    if (k == 0) return out;
  }
}

std::vector<SweepPoint> expand_points(const SweepSpec& s) {
  std::vector<SweepPoint> out;
  auto aps = arch_points(s);
  for (size_t a = 0; a < aps.size(); ++a)
    for (size_t w = 0; w < s.workloads.size(); ++w)
      for (const auto& pol : s.policies) {
        SweepPoint p;
        p.workload = w;
        p.policy = pol;
        p.arch_point = a;
        p.values = aps[a];
        p.id = s.workloads[w].name + "|" + pol;
        for (size_t i = 0; i < s.axes.size(); ++i) p.id += "|" + s.axes[i].key + "=" + p.values[i];
        out.push_back(std::move(p));
      }
  return out;
}

std::vector<std::string> point_sets(const SweepSpec& s, const SweepPoint& p) {
  std::vector<std::string> sets = s.base_sets;
  for (size_t i = 0; i < s.axes.size(); ++i) sets.push_back(s.axes[i].key + "=" + p.values[i]);
  return sets;
}

nlohmann::json sweep_manifest(const SweepSpec& s) {
  nlohmann::json axes = nlohmann::json::array();
  nlohmann::json reference = nlohmann::json::object();
  for (const auto& a : s.axes) {
    nlohmann::json vals = nlohmann::json::array();
    for (const auto& v : a.values) vals.push_back(scalar_to_json(v));
    axes.push_back({{"key", a.key}, {"values", vals}});
  }
  auto aps = arch_points(s);
  for (size_t i = 0; i < s.axes.size(); ++i) reference[s.axes[i].key] = scalar_to_json(aps.front()[i]);
  nlohmann::json wl = nlohmann::json::array();
  for (const auto& w : s.workloads) wl.push_back({{"name", w.name}, {"file", w.file}});
  nlohmann::json m = {{"name", s.name},
                      {"file", fs::absolute(s.file).lexically_normal().string()},
                      {"description", s.description},
                      {"base", s.base},
                      {"set", s.base_sets},
                      {"workloads", wl},
                      {"fusion", s.policies},
                      {"combine", s.zip ? "zip" : "product"},
                      {"axes", axes},
                      {"reference", reference},
                      {"traces", s.traces},
                      {"points", expand_points(s).size()},
                      {"sweep_hash", sweep_hash(s)},
                      // The config before the axes: the yardstick of the report's hardware-cost proxy.
                      {"base_arch", arch_to_json(load_arch_config(s.base, arch_sets(s.base_sets)))}};
  // Only serving sweeps say what their points run: a run sweep's manifest stays as it was.
  if (s.serving()) m["command"] = s.command;
  return m;
}

std::vector<size_t> shard_point_indices(const std::vector<SweepPoint>& all, const Shard& shard) {
  std::vector<size_t> mine;
  if (!shard.active()) {
    for (size_t i = 0; i < all.size(); ++i) mine.push_back(i);
    return mine;
  }
  auto fnv = [](const std::string& text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return h;
  };
  std::vector<std::pair<uint64_t, size_t>> ranked;  // (hash of id, index): ties go by index
  ranked.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) ranked.emplace_back(fnv(all[i].id), i);
  std::sort(ranked.begin(), ranked.end());
  for (size_t r = static_cast<size_t>(shard.index); r < ranked.size(); r += static_cast<size_t>(shard.count))
    mine.push_back(ranked[r].second);
  std::sort(mine.begin(), mine.end());
  return mine;
}

std::string sweep_hash(const SweepSpec& s) {
  auto fnv = [](const std::string& text) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64: a fingerprint, not a security measure
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return std::string(hex);
  };
  nlohmann::json arch = arch_to_json(load_arch_config(s.base, arch_sets(s.base_sets)));
  arch.erase("file");  // where the config lies is not what it says
  nlohmann::json wl = nlohmann::json::array();
  for (const auto& w : s.workloads) {
    std::ifstream f(w.file, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    wl.push_back({{"name", w.name}, {"content", fnv(text.str())}});
  }
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : s.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  // nlohmann::json keeps object keys sorted, so the dump is canonical.
  // The name and description are left out: they do not change what a point computes.
  nlohmann::json resolved = {{"arch", arch},         {"set", s.base_sets}, {"workloads", wl},
                             {"fusion", s.policies}, {"combine", s.zip ? "zip" : "product"},
                             {"axes", axes},         {"traces", s.traces}};
  // Points of `lpu serve` compute something else than those of `lpu run` (run sweeps' hashes
  // stay what they were).
  if (s.serving()) resolved["command"] = s.command;
  return fnv(resolved.dump());
}

}  // namespace lpu
