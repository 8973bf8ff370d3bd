#include "jobs/op_class.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <unordered_map>
#include <utility>

#include "op_classes_table.h"

namespace lpu {

namespace {
struct Table {
  std::regex layer_prefix;
  std::vector<std::string> order;
  std::vector<std::pair<std::string, std::regex>> rules;
};

// Python's re.search and ECMAScript regexes agree on the table's patterns (anchors,
// alternation, \d); the test `op_class_agrees` checks the two classifiers on real kernels.
const Table& table() {
  static const Table t = [] {
    Table r;
    nlohmann::json j = nlohmann::json::parse(kOpClassesJson);
    r.layer_prefix = std::regex(j.at("layer_prefix").get<std::string>());
    r.order = j.at("order").get<std::vector<std::string>>();
    for (const auto& rule : j.at("rules"))
      r.rules.emplace_back(rule.at(0).get<std::string>(), std::regex(rule.at(1).get<std::string>()));
    return r;
  }();
  return t;
}

std::string classify(const std::string& node) {
  const Table& t = table();
  std::string name = std::regex_replace(node, t.layer_prefix, "", std::regex_constants::format_first_only);
  // The rules see the name without its layer prefix, which every layer shares: they run once
  // per such name (per thread, bounded) instead of once per layer.
  thread_local std::unordered_map<std::string, std::string> by_name;
  if (auto it = by_name.find(name); it != by_name.end()) return it->second;
  if (by_name.size() > 100000) by_name.clear();
  std::string cls = "other";
  for (const auto& [c, re] : t.rules)
    if (std::regex_search(name, re)) {
      cls = c;
      break;
    }
  return by_name[name] = cls;
}
}  // namespace

const std::vector<std::string>& op_class_order() { return table().order; }

std::string node_op_class(const std::string& node) {
  // Every layer repeats its node names and a run classifies each several times: the regexes
  // cost 7% of a LLaMA-2-7B `lpu run`. The memo is per thread and bounded.
  thread_local std::unordered_map<std::string, std::string> memo;
  if (auto it = memo.find(node); it != memo.end()) return it->second;
  if (memo.size() > 100000) memo.clear();
  return memo[node] = classify(node);
}

std::string kernel_op_class(const std::string& kernel_name, const std::vector<std::string>& nodes) {
  static const std::regex kernel_prefix("^k\\d+_");
  std::vector<std::string> names = nodes;
  if (names.empty()) names.push_back(std::regex_replace(kernel_name, kernel_prefix, ""));
  const auto& order = op_class_order();
  size_t best = order.size() - 1;
  for (const auto& n : names) {
    auto it = std::find(order.begin(), order.end(), node_op_class(n));
    best = std::min(best, static_cast<size_t>(it - order.begin()));
  }
  return order[std::min(best, order.size() - 1)];
}

}  // namespace lpu
