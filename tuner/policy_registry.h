// The fusion policies, one registry for the CLI (`--fusion`), sweeps (`fusion:`) and lpu-bench:
// the compiler's own (fusion_policies() in schedule/schedule.h: none, greedy) and the tuner's,
// which compile several candidates and simulate each (tuner.h).
#pragma once
#include <string>
#include <vector>

namespace lpu {

struct PolicyInfo {
  std::string name;
  std::string description;
  bool simulates = false;     // needs the simulator to choose (a tuner policy)
  bool changes_arch = false;  // may run on an arch config other than the one given (ISU options)
};

const std::vector<PolicyInfo>& policy_registry();
// The entry named `name`, or nullptr.
const PolicyInfo* find_policy(const std::string& name);
// Throws InputError naming every known policy when `name` is not one ("--fusion" prefixes it).
const PolicyInfo& require_policy(const std::string& name, const std::string& where = "fusion policy");
// "none | greedy | search | search-isu", for help texts.
std::string policy_names(const std::string& sep = " | ");

}  // namespace lpu
