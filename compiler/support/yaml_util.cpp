#include "support/yaml_util.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "support/input_file.h"

namespace lpu {

std::string join_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

namespace {
// The most nodes a document may expand to, counting every alias as a copy of its anchor: far
// above any config, workload or sweep, far below what makes a walk over it slow.
constexpr int64_t kMaxYamlNodes = 1'000'000;

// yaml-cpp accepts what our readers cannot mean: a key given twice (lookups see one of them,
// silently) and a key that is a sequence or map (`? [a, b]`). Both are rejected on load, with
// the line. The walk is iterative: yaml-cpp bounds the nesting depth it parses, we add none.
// An alias is a reference to its anchor's node, so a document of aliases nesting aliases (a
// "billion laughs") is small in memory but expands exponentially for every walk over it: the
// walk counts the nodes it expands and refuses the document past kMaxYamlNodes, before any
// reader walks it.
// The path of a child for messages, kept short: a self-referential alias (`a: &x [*x]`) nests
// without end, and a path growing with the depth made the bounded walk quadratic (a hang).
std::string child_path(const std::string& path, const std::string& step) {
  constexpr size_t kMaxPathChars = 256;
  if (path.size() >= kMaxPathChars) return path.back() == '.' ? path : path + "...";
  return path + step;
}

void check_keys_unique(const YAML::Node& root, const std::string& file) {
  std::vector<std::pair<YAML::Node, std::string>> todo{{root, ""}};
  int64_t expanded = 0;
  while (!todo.empty()) {
    auto [n, path] = todo.back();
    todo.pop_back();
    if (++expanded > kMaxYamlNodes)
      throw InputError(strcat(file, ":", n.Mark().line + 1, ": ", path.empty() ? "<root>" : path,
                              ": the document expands to more than ", kMaxYamlNodes,
                              " nodes (aliases nesting aliases?); no workbench file needs that many"));
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) todo.push_back({n[i], child_path(path, strcat("[", i, "]"))});
    } else if (n.IsMap()) {
      std::map<std::string, int> seen;  // key -> line
      for (auto it = n.begin(); it != n.end(); ++it) {
        int line = it->first.Mark().line + 1;
        if (!it->first.IsScalar())
          throw InputError(strcat(file, ":", line, ": ", path.empty() ? "<root>" : path,
                                  ": a key must be a plain name, not a sequence or mapping"));
        const std::string& k = it->first.Scalar();
        if (auto [at, fresh] = seen.emplace(k, line); !fresh)
          throw InputError(strcat(file, ":", line, ": ", join_path(path, k), ": duplicate key (first given on line ",
                                  at->second, ")"));
        todo.push_back({it->second, path.size() >= 256 ? child_path(path, "") : join_path(path, k)});
      }
    }
  }
}
}  // namespace

YamlDoc load_yaml_string(const std::string& text, const std::string& name) {
  YamlDoc d;
  d.file = name;
  try {
    d.root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(strcat(name, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg));
  }
  check_keys_unique(d.root, name);
  return d;
}

YamlDoc load_yaml_file(const std::string& path) {
  return load_yaml_string(read_text_input_file(path, "", "YAML"), path);
}

void apply_override(YamlDoc& doc, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(strcat("--set ", assignment, ": expected key.path=value"));
  std::string path = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  YAML::Node v;
  try {
    v = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(strcat("--set ", assignment, ": value is not valid YAML: ", e.msg));
  }
  check_keys_unique(v, strcat("--set ", assignment));
  if (!doc.root || doc.root.IsNull()) doc.root = YAML::Node(YAML::NodeType::Map);
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string k; std::getline(ss, k, '.');) {
    if (k.empty()) throw InputError(strcat("--set ", assignment, ": empty key in path"));
    keys.push_back(k);
  }
  // yaml-cpp nodes are handles; walk with fresh handles so assignment does not alias.
  std::vector<YAML::Node> chain{doc.root};
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node cur = chain.back();
    if (!cur.IsMap()) throw InputError(strcat("--set ", assignment, ": '", keys[i], "' is not inside a map"));
    YAML::Node next = cur[keys[i]];
    if (!next || next.IsNull()) {
      cur[keys[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[keys[i]];
    }
    chain.push_back(next);
  }
  YAML::Node last = chain.back();
  if (!last.IsMap()) throw InputError(strcat("--set ", assignment, ": parent of '", keys.back(), "' is not a map"));
  last[keys.back()] = v;
  doc.overrides.push_back(assignment);
}

void YamlReader::fail(const YAML::Node& at, const std::string& path, const std::string& msg) const {
  // A value that came from --set has no line in the file: name the assignment instead.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    std::string key = it->substr(0, it->find('='));
    if (path == key || path.rfind(key + ".", 0) == 0)
      throw InputError(strcat(file_, ": --set ", override_prefix_, *it, ": ", path, ": ", msg));
  }
  int line = at.IsDefined() ? at.Mark().line + 1 : 0;
  std::string where = line > 0 ? strcat(file_, ":", line) : strcat(file_, " (from defaults)");
  throw InputError(strcat(where, ": ", path, ": ", msg));
}

namespace {
std::string format_double_short(double v) {
  std::ostringstream os;
  os.precision(15);  // 4294967297 stays 4294967297, not 4.29497e+09
  os << v;
  return os.str();
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

void YamlReader::require_map(const YAML::Node& n, const std::string& path) const {
  if (!n.IsMap()) fail(n, path.empty() ? "<root>" : path, "expected a mapping of keys to values");
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& path,
                            const std::vector<std::string>& allowed) const {
  require_map(map, path);
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string best;
    size_t bd = 1000;
    for (const auto& a : allowed)
      if (size_t d = edit_distance(k, a); d < bd) {
        bd = d;
        best = a;
      }
    std::string hint = bd <= 3 ? strcat(" (did you mean '", best, "'?)") : "";
    std::string all;
    for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
    fail(it->first, join_path(path, k), strcat("unknown key", hint, "; expected one of: ", all));
  }
}

YAML::Node YamlReader::child(const YAML::Node& map, const std::string& key, const std::string& path) const {
  require_map(map, path);
  YAML::Node n = map[key];
  if (!n) fail(map, join_path(path, key), "missing required key");
  if (!n.IsScalar()) fail(n, join_path(path, key), "expected a scalar value");
  return n;
}

double YamlReader::get_double(const YAML::Node& map, const std::string& key, const std::string& path) const {
  YAML::Node n = child(map, key, path);
  try {
    double v = n.as<double>();
    if (!std::isfinite(v)) fail(n, join_path(path, key), "must be a finite number");
    return v;
  } catch (const YAML::Exception&) {
    fail(n, join_path(path, key), strcat("expected a number, got '", n.Scalar(), "'"));
  }
}
double YamlReader::get_double(const YAML::Node& map, const std::string& key, const std::string& path,
                              double dflt) const {
  if (!map[key]) return dflt;
  return get_double(map, key, path);
}

int64_t YamlReader::get_int(const YAML::Node& map, const std::string& key, const std::string& path) const {
  YAML::Node n = child(map, key, path);
  try {
    return n.as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(n, join_path(path, key), strcat("expected an integer, got '", n.Scalar(), "'"));
  }
}
int64_t YamlReader::get_int(const YAML::Node& map, const std::string& key, const std::string& path,
                            int64_t dflt) const {
  if (!map[key]) return dflt;
  return get_int(map, key, path);
}

bool YamlReader::get_bool(const YAML::Node& map, const std::string& key, const std::string& path, bool dflt) const {
  if (!map[key]) return dflt;
  YAML::Node n = child(map, key, path);
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail(n, join_path(path, key), strcat("expected true or false, got '", n.Scalar(), "'"));
  }
}

std::string YamlReader::get_string(const YAML::Node& map, const std::string& key, const std::string& path) const {
  return child(map, key, path).Scalar();
}
std::string YamlReader::get_string(const YAML::Node& map, const std::string& key, const std::string& path,
                                   const std::string& dflt) const {
  if (!map[key]) return dflt;
  return get_string(map, key, path);
}

void YamlReader::check_range(const YAML::Node& map, const std::string& key, const std::string& path, double v,
                             double lo, double hi) const {
  // The value as written, not `v`: callers narrow to int before checking, and 4294967297
  // would wrap to 1 and pass.
  YAML::Node n = map.IsMap() ? map[key] : YAML::Node();
  if (n && n.IsScalar()) {
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
    }
  }
  if (v >= lo && v <= hi) return;
  fail(n ? n : map, join_path(path, key),
       strcat("value ", format_double_short(v), " out of range; expected ", format_double_short(lo), " .. ",
              format_double_short(hi)));
}

}  // namespace lpu
