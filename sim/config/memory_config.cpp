#include "config/memory_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "support/error.h"
#include "support/yaml_util.h"

#ifndef LPU_SOURCE_DIR
#define LPU_SOURCE_DIR "."
#endif

namespace lpu {

namespace {

using Memory = ArchConfig::Memory;

// The keys a technology preset must give, and a config's memory section may override.
struct IntKey {
  const char* name;
  int Memory::*field;
  double lo, hi;
};
struct DoubleKey {
  const char* name;
  double Memory::*field;
  double lo, hi;
};
const std::vector<IntKey>& int_keys() {
  static const std::vector<IntKey> k = {
      {"channel_bits", &Memory::channel_bits, 8, 4096}, {"pseudo_channels", &Memory::pseudo_channels, 1, 16},
      {"bank_groups", &Memory::bank_groups, 1, 64},     {"banks_per_group", &Memory::banks_per_group, 1, 256},
      {"row_bytes", &Memory::row_bytes, 32, 1 << 20},   {"burst_length", &Memory::burst_length, 1, 1024}};
  return k;
}
const std::vector<DoubleKey>& double_keys() {
  static const std::vector<DoubleKey> k = {{"data_rate_mtps", &Memory::data_rate_mtps, 1, 1e6},
                                           {"tRCD_ns", &Memory::tRCD_ns, 0, 1e6},
                                           {"tRP_ns", &Memory::tRP_ns, 0, 1e6},
                                           {"tCL_ns", &Memory::tCL_ns, 0, 1e6},
                                           {"tRAS_ns", &Memory::tRAS_ns, 0, 1e6},
                                           {"tRRD_ns", &Memory::tRRD_ns, 0, 1e6},
                                           {"tFAW_ns", &Memory::tFAW_ns, 0, 1e6},
                                           {"tWTR_ns", &Memory::tWTR_ns, 0, 1e6},
                                           {"tRTW_ns", &Memory::tRTW_ns, 0, 1e6},
                                           {"tREFI_ns", &Memory::tREFI_ns, 1, 1e9},
                                           {"tRFC_ns", &Memory::tRFC_ns, 0, 1e6}};
  return k;
}
const std::vector<std::string>& string_keys() {
  static const std::vector<std::string> k = {"page_policy", "address_mapping"};
  return k;
}

std::vector<std::string> preset_keys() {
  std::vector<std::string> keys = {"name"};
  for (const auto& k : int_keys()) keys.push_back(k.name);
  for (const auto& k : double_keys()) keys.push_back(k.name);
  for (const auto& k : string_keys()) keys.push_back(k);
  return keys;
}

std::string technology_dir() {
  std::error_code ec;
  for (const std::string& dir : {std::string("configs/memory"), std::string(LPU_SOURCE_DIR) + "/configs/memory"})
    if (std::filesystem::is_directory(dir, ec)) return dir;
  return std::string(LPU_SOURCE_DIR) + "/configs/memory";
}

// A mapping names each of Ro Ba Bg Co Pc Ch once, the row first (it takes the address bits
// left over, so it has no count of its own).
bool valid_mapping(const std::string& m) {
  if (m.size() != 12 || m.compare(0, 2, "Ro") != 0) return false;
  std::vector<std::string> fields;
  for (size_t i = 0; i < m.size(); i += 2) fields.push_back(m.substr(i, 2));
  std::sort(fields.begin(), fields.end());
  return fields == std::vector<std::string>{"Ba", "Bg", "Ch", "Co", "Pc", "Ro"};
}

// Each key from the section when it gives it, else from the preset (which must).
void read_timing(const YamlReader& r, const YAML::Node& sec, const YamlReader& pr, const YAML::Node& preset,
                 const std::string& preset_path, Memory& m) {
  auto source = [&](const char* key) -> std::pair<const YamlReader*, const YAML::Node*> {
    if (sec[key]) return {&r, &sec};
    return {&pr, &preset};
  };
  for (const auto& k : int_keys()) {
    auto [rd, node] = source(k.name);
    const std::string path = rd == &r ? "memory" : preset_path;
    m.*k.field = static_cast<int>(rd->get_int(*node, k.name, path));
    rd->check_range(*node, k.name, path, m.*k.field, k.lo, k.hi);
  }
  for (const auto& k : double_keys()) {
    auto [rd, node] = source(k.name);
    const std::string path = rd == &r ? "memory" : preset_path;
    m.*k.field = rd->get_double(*node, k.name, path);
    rd->check_range(*node, k.name, path, m.*k.field, k.lo, k.hi);
  }
  auto [prd, pnode] = source("page_policy");
  const std::string policy = prd->get_string(*pnode, "page_policy", prd == &r ? "memory" : preset_path);
  if (policy != "open" && policy != "closed")
    prd->fail((*pnode)["page_policy"], join_path(prd == &r ? "memory" : preset_path, "page_policy"),
              "expected open or closed, got '" + policy + "'");
  m.page_policy = policy == "open" ? Memory::PagePolicy::Open : Memory::PagePolicy::Closed;
  auto [mrd, mnode] = source("address_mapping");
  const std::string mpath = mrd == &r ? "memory" : preset_path;
  m.address_mapping = mrd->get_string(*mnode, "address_mapping", mpath);
  if (!valid_mapping(m.address_mapping))
    mrd->fail((*mnode)["address_mapping"], join_path(mpath, "address_mapping"),
              "expected the fields Ro Ba Bg Co Pc Ch, each once, Ro first (e.g. RoBaBgCoPcCh), got '" +
                  m.address_mapping + "'");
}

// Shapes the keys must agree on: whole bytes per pseudo-channel burst, whole bursts per row,
// refresh shorter than its interval.
void check_shape(const YamlReader& r, const YAML::Node& sec, const Memory& m) {
  if (m.channel_bits % m.pseudo_channels != 0 || m.pseudo_channel_bits() % 8 != 0)
    r.fail(sec, "memory.pseudo_channels",
           strcat("channel_bits ", m.channel_bits, " / pseudo_channels ", m.pseudo_channels,
                  " must be a whole number of bytes"));
  if (m.row_bytes % m.burst_bytes() != 0)
    r.fail(sec, "memory.row_bytes",
           strcat("row_bytes ", m.row_bytes, " must be a multiple of the burst (", m.burst_bytes(), " bytes)"));
  if (m.tRFC_ns >= m.tREFI_ns)
    r.fail(sec, "memory.tRFC_ns", strcat("tRFC_ns ", m.tRFC_ns, " must be shorter than tREFI_ns ", m.tREFI_ns));
}

// memory.channels, or the count whose peak is nearest hbm.bandwidth_gbps. Under the bank model
// its peak must be within 5% of the bandwidth model's, so both describe one device; under the
// bandwidth model the section's timing is unused and any hbm.bandwidth_gbps goes (a sweep of it
// on a preset stays valid).
void resolve_channels(const YamlReader& r, const YAML::Node& sec, const ArchConfig& a, Memory& m) {
  const double per = m.channel_gbps();
  if (sec["channels"]) {
    m.channels = static_cast<int>(r.get_int(sec, "channels", "memory"));
    r.check_range(sec, "channels", "memory", m.channels, 1, 65536);
  } else if (m.model != Memory::Model::Banks) {
    m.channels = static_cast<int>(std::clamp(std::round(a.hbm.bandwidth_gbps / per), 1.0, 65536.0));
  } else {
    const double n = std::round(a.hbm.bandwidth_gbps / per);  // before the int: 1e6 GB/s of 1 MT/s x8 is 1e9
    if (n > 65536)
      r.fail(sec, "memory.channels",
             strcat("hbm.bandwidth_gbps ", a.hbm.bandwidth_gbps, " needs ", n, " channels of ", m.technology, " at ",
                    per, " GB/s each; at most 65536"));
    m.channels = static_cast<int>(n);
  }
  if (m.model != Memory::Model::Banks) return;
  // The model keeps a record per bank: 2^22 of them (128 MiB) at most.
  const uint64_t banks = static_cast<uint64_t>(m.channels) * static_cast<uint64_t>(m.pseudo_channels) *
                         static_cast<uint64_t>(m.bank_groups) * static_cast<uint64_t>(m.banks_per_group);
  if (banks > (uint64_t{1} << 22))
    r.fail(sec, "memory.channels",
           strcat(m.channels, " channels x ", m.pseudo_channels, " pseudo-channels x ",
                  m.bank_groups * m.banks_per_group, " banks = ", banks, " banks; at most 4194304"));
  const double peak = m.peak_gbps();
  if (m.channels < 1 || std::fabs(peak - a.hbm.bandwidth_gbps) > 0.05 * a.hbm.bandwidth_gbps)
    r.fail(sec["channels"] ? sec["channels"] : sec, "memory.channels",
           strcat(std::max(m.channels, 0), " channels of ", m.technology, " at ", per, " GB/s each peak at ", peak,
                  " GB/s, not within 5% of hbm.bandwidth_gbps ", a.hbm.bandwidth_gbps,
                  ": set memory.channels, memory.data_rate_mtps or hbm.bandwidth_gbps"));
}

}  // namespace

std::vector<std::string> memory_technologies() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(technology_dir(), ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

const char* memory_model_name(Memory::Model m) { return m == Memory::Model::Banks ? "banks" : "bandwidth"; }

namespace {

// The technology `sec` names, its preset read under the section's overrides.
void resolve_technology(const YamlReader& r, const YAML::Node& sec, Memory& m) {
  m.technology = r.get_string(sec, "technology", "memory");
  const std::vector<std::string> known = memory_technologies();
  if (std::find(known.begin(), known.end(), m.technology) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    r.fail(sec["technology"], "memory.technology",
           strcat("expected one of ", list, " (configs/memory/*.yaml), got '", m.technology, "'"));
  }
  YamlDoc preset = load_yaml_file(technology_dir() + "/" + m.technology + ".yaml");
  YamlReader pr(preset);
  pr.check_keys(preset.root, "", preset_keys());
  read_timing(r, sec, pr, preset.root, "", m);
  check_shape(r, sec, m);
}

}  // namespace

void resolve_memory(const YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node sec = root["memory"];
  if (!sec || sec.IsNull()) return;
  std::vector<std::string> keys = preset_keys();
  keys.erase(keys.begin());  // a config's section names the technology, not the preset's name
  for (const char* k : {"model", "technology", "channels"}) keys.push_back(k);
  r.check_keys(sec, "memory", keys);
  Memory& m = a.memory;
  const std::string model = r.get_string(sec, "model", "memory", "bandwidth");
  if (model != "bandwidth" && model != "banks")
    r.fail(sec["model"], "memory.model", "expected bandwidth or banks, got '" + model + "'");
  m.model = model == "banks" ? Memory::Model::Banks : Memory::Model::Bandwidth;
  resolve_technology(r, sec, m);
  resolve_channels(r, sec, a, m);
}

Memory load_memory_technology(const std::string& name) {
  YamlDoc doc{"memory", YAML::Node(YAML::NodeType::Map), {}, ""};
  doc.root["technology"] = name;
  YamlReader r(doc);
  Memory m;
  m.model = Memory::Model::Banks;
  resolve_technology(r, doc.root, m);
  return m;
}

nlohmann::json memory_to_json(const Memory& m) {
  nlohmann::json j = {{"model", memory_model_name(m.model)},
                      {"technology", m.technology},
                      {"channels", m.channels},
                      {"page_policy", m.page_policy == Memory::PagePolicy::Open ? "open" : "closed"},
                      {"address_mapping", m.address_mapping}};
  for (const auto& k : int_keys()) j[k.name] = m.*k.field;
  for (const auto& k : double_keys()) j[k.name] = m.*k.field;
  return j;
}

}  // namespace lpu
