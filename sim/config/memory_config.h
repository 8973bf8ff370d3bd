// The `memory` section of an architecture config and the technology presets it names
// (configs/memory/*.yaml): internal to the arch layer (arch_config.cpp calls these).
#pragma once
#include <nlohmann/json.hpp>

#include "config/arch_config.h"

namespace YAML {
class Node;
}

namespace lpu {

class YamlReader;

// Reads `memory` (optional) into a.memory, after `hbm` was read: the technology's preset with
// the section's overrides, validated, and the channel count derived from hbm.bandwidth_gbps.
void resolve_memory(const YamlReader& r, const YAML::Node& root, ArchConfig& a);
// The resolved section; arch_to_json adds it only under the bank model, so configs on the
// bandwidth model keep the JSON (and the sweep fingerprints) they had without a section.
nlohmann::json memory_to_json(const ArchConfig::Memory& m);

}  // namespace lpu
