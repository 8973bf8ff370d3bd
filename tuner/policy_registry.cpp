#include "policy_registry.h"

#include "schedule/schedule.h"
#include "support/error.h"

namespace lpu {

const std::vector<PolicyInfo>& policy_registry() {
  static const std::vector<PolicyInfo> r = [] {
    std::vector<PolicyInfo> v;
    // The compiler's policies first, in its order; a policy added there without a description
    // here still gets an entry (so it is never missing from the CLI or sweeps).
    for (const auto& p : fusion_policies()) {
      std::string d = p == "none"     ? "one kernel per loop-IR node; every intermediate goes through HBM"
                      : p == "greedy" ? "Inductor-like: legal pairs fused by HBM bytes saved, never adding traffic"
                                      : "compiler policy";
      v.push_back({p, d, false, false});
    }
    v.push_back({"search",
                 "tuner: greedy and compiler variants (fusion kinds, kernel size, tiling, buffering), each "
                 "simulated; keeps the fastest on the given arch config",
                 true, false});
    v.push_back({"search-isu",
                 "tuner: search plus the ISU options isu.weight_prefetch and isu.chaining (changes the arch "
                 "config; the report says how)",
                 true, true});
    return v;
  }();
  return r;
}

const PolicyInfo* find_policy(const std::string& name) {
  for (const auto& p : policy_registry())
    if (p.name == name) return &p;
  return nullptr;
}

const PolicyInfo& require_policy(const std::string& name, const std::string& where) {
  if (const PolicyInfo* p = find_policy(name)) return *p;
  throw InputError(strcat("unknown ", where, " '", name, "'; expected one of: ", policy_names(", ")));
}

std::string policy_names(const std::string& sep) {
  std::string s;
  for (const auto& p : policy_registry()) s += (s.empty() ? "" : sep) + p.name;
  return s;
}

}  // namespace lpu
