#include "config/arch_config.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "config/memory_config.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"
#include "support/error.h"
#include "support/input_file.h"
#include "support/yaml_util.h"

#ifndef LPU_SOURCE_DIR
#define LPU_SOURCE_DIR "."
#endif

namespace lpu {

VxeOpTiming ArchConfig::Vxe::timing(const std::string& op) const {
  if (auto it = ops.find(op); it != ops.end()) return it->second;
  return {4, 1.0};
}

namespace {

// Default per-op timings by class; a config's vxe.ops entries override single ops.
std::map<std::string, VxeOpTiming> build_default_vxe_ops() {
  std::map<std::string, VxeOpTiming> m;
#define LPU_DEFAULT_TIMING(name, arity, cls, ...)                   \
  m[#name] = std::string(#cls) == "alu"      ? VxeOpTiming{4, 1.0}  \
             : std::string(#cls) == "divide" ? VxeOpTiming{12, 4.0} \
                                             : VxeOpTiming{16, 4.0};
  LPU_SCALAR_OPS(LPU_DEFAULT_TIMING)
#undef LPU_DEFAULT_TIMING
  // Reductions: one combine per element; var (Welford) updates mean and M2, twice the work.
#define LPU_DEFAULT_RED_TIMING(name) m["r" #name] = VxeOpTiming{8, 1.0};
  LPU_REDUCTION_TYPES(LPU_DEFAULT_RED_TIMING)
#undef LPU_DEFAULT_RED_TIMING
  m["rvar"] = {8, 2.0};
  m["mov"] = {2, 1.0};
  return m;
}
std::map<std::string, VxeOpTiming> default_vxe_ops() {
  static const std::map<std::string, VxeOpTiming> m = build_default_vxe_ops();
  return m;
}

// The optional `energy` section: every key in it required, each a finite number >= 0
// (docs/config.md); absent, energy is not modelled.
void resolve_energy(const YamlReader& r, const YAML::Node& root, ArchConfig::Energy& e) {
  YAML::Node en = root["energy"];
  if (!en || en.IsNull()) return;
  const std::vector<std::string> scalars = {"hbm_read_pj_per_bit",  "hbm_write_pj_per_bit",  "sxe_pj_per_mac",
                                            "lmu_read_pj_per_byte", "lmu_write_pj_per_byte", "esl_pj_per_bit"};
  std::vector<std::string> keys = scalars;
  keys.push_back("vxe_pj_per_op");
  keys.push_back("sxe_pj_per_dequant");
  keys.push_back("static_mw");
  r.check_keys(en, "energy", keys);
  auto value = [&](const YAML::Node& map, const std::string& key, const std::string& path, double hi) {
    double v = r.get_double(map, key, path);
    r.check_range(map, key, path, v, 0, hi);
    return v;
  };
  e.configured = true;
  e.hbm_read_pj_per_bit = value(en, "hbm_read_pj_per_bit", "energy", 1e6);
  e.hbm_write_pj_per_bit = value(en, "hbm_write_pj_per_bit", "energy", 1e6);
  e.sxe_pj_per_mac = value(en, "sxe_pj_per_mac", "energy", 1e6);
  e.lmu_read_pj_per_byte = value(en, "lmu_read_pj_per_byte", "energy", 1e6);
  e.lmu_write_pj_per_byte = value(en, "lmu_write_pj_per_byte", "energy", 1e6);
  e.esl_pj_per_bit = value(en, "esl_pj_per_bit", "energy", 1e6);
  // Optional (configs written before packed weights have none): 0 when absent.
  if (en["sxe_pj_per_dequant"]) e.sxe_pj_per_dequant = value(en, "sxe_pj_per_dequant", "energy", 1e6);
  // A table of keys: each listed key required, no other allowed.
  auto table = [&](const char* key, const std::vector<std::string>& names, double hi,
                   std::map<std::string, double>& out) {
    YAML::Node t = en[key];
    std::string path = std::string("energy.") + key;
    if (!t) r.fail(en, path, "missing required key");
    r.check_keys(t, path, names);
    for (const auto& n : names) out[n] = value(t, n, path, hi);
  };
  table("vxe_pj_per_op", energy_vxe_classes(), 1e6, e.vxe_pj_per_op);
  table("static_mw", energy_engines(), 1e9, e.static_mw);
}

// A section of the root: checked for unknown keys; an empty map when absent (or an error
// when required) or written with nothing under it ("lmu:").
YAML::Node section(YamlReader& r, const YAML::Node& root, const char* key, const std::vector<std::string>& keys,
                   bool required) {
  YAML::Node n = root[key];
  if (!n) {
    if (required) r.fail(root, key, "missing required section");
    return YAML::Node(YAML::NodeType::Map);
  }
  if (n.IsNull()) return YAML::Node(YAML::NodeType::Map);
  r.check_keys(n, key, keys);
  return n;
}

void resolve_hbm(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node hbm = section(
      r, root, "hbm",
      {"bandwidth_gbps", "channels", "capacity_gib", "latency_ns", "burst_bytes", "interleave_bytes", "efficiency"},
      true);
  a.hbm.bandwidth_gbps = r.get_double(hbm, "bandwidth_gbps", "hbm");
  r.check_range(hbm, "bandwidth_gbps", "hbm", a.hbm.bandwidth_gbps, 0.1, 1e6);
  a.hbm.channels = static_cast<int>(r.get_int(hbm, "channels", "hbm"));
  r.check_range(hbm, "channels", "hbm", a.hbm.channels, 1, 1024);
  a.hbm.capacity_gib = r.get_double(hbm, "capacity_gib", "hbm");
  r.check_range(hbm, "capacity_gib", "hbm", a.hbm.capacity_gib, 1.0 / 1024, 1 << 20);
  a.hbm.latency_ns = r.get_double(hbm, "latency_ns", "hbm", a.hbm.latency_ns);
  r.check_range(hbm, "latency_ns", "hbm", a.hbm.latency_ns, 0, 1e6);
  a.hbm.burst_bytes = static_cast<int>(r.get_int(hbm, "burst_bytes", "hbm", a.hbm.burst_bytes));
  r.check_range(hbm, "burst_bytes", "hbm", a.hbm.burst_bytes, 1, 4096);
  a.hbm.interleave_bytes = static_cast<int>(r.get_int(hbm, "interleave_bytes", "hbm", a.hbm.interleave_bytes));
  r.check_range(hbm, "interleave_bytes", "hbm", a.hbm.interleave_bytes, 1, 1 << 20);
  a.hbm.efficiency = r.get_double(hbm, "efficiency", "hbm", a.hbm.efficiency);
  r.check_range(hbm, "efficiency", "hbm", a.hbm.efficiency, 0.01, 1.0);
}

void resolve_dma(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node dma = section(r, root, "dma", {"engines", "setup_cycles", "queue_depth"}, false);
  a.dma.engines = static_cast<int>(r.get_int(dma, "engines", "dma", a.dma.engines));
  r.check_range(dma, "engines", "dma", a.dma.engines, 1, 64);
  a.dma.setup_cycles = static_cast<int>(r.get_int(dma, "setup_cycles", "dma", a.dma.setup_cycles));
  r.check_range(dma, "setup_cycles", "dma", a.dma.setup_cycles, 0, 1 << 20);
  a.dma.queue_depth = static_cast<int>(r.get_int(dma, "queue_depth", "dma", a.dma.queue_depth));
  r.check_range(dma, "queue_depth", "dma", a.dma.queue_depth, 1, 4096);
}

void resolve_lmu(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node lmu = section(r, root, "lmu", {"capacity_kib", "banks", "bytes_per_cycle", "double_buffer"}, true);
  a.lmu.capacity_kib = static_cast<int>(r.get_int(lmu, "capacity_kib", "lmu"));
  r.check_range(lmu, "capacity_kib", "lmu", a.lmu.capacity_kib, 1, 1 << 20);
  a.lmu.banks = static_cast<int>(r.get_int(lmu, "banks", "lmu", a.lmu.banks));
  r.check_range(lmu, "banks", "lmu", a.lmu.banks, 1, 1024);
  a.lmu.bytes_per_cycle = static_cast<int>(r.get_int(lmu, "bytes_per_cycle", "lmu", a.lmu.bytes_per_cycle));
  r.check_range(lmu, "bytes_per_cycle", "lmu", a.lmu.bytes_per_cycle, 1, 1 << 16);
  a.lmu.double_buffer = r.get_bool(lmu, "double_buffer", "lmu", a.lmu.double_buffer);
}

void resolve_vxe(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node vxe = section(r, root, "vxe", {"lanes", "queue_depth", "ops", "model", "chains"}, true);
  a.vxe.lanes = static_cast<int>(r.get_int(vxe, "lanes", "vxe"));
  r.check_range(vxe, "lanes", "vxe", a.vxe.lanes, 1, 1 << 16);
  a.vxe.queue_depth = static_cast<int>(r.get_int(vxe, "queue_depth", "vxe", a.vxe.queue_depth));
  r.check_range(vxe, "queue_depth", "vxe", a.vxe.queue_depth, 1, 4096);
  std::string model = r.get_string(vxe, "model", "vxe", "approx");
  if (model == "approx")
    a.vxe.model = ArchConfig::Vxe::Model::Approx;
  else if (model == "rtl")
    a.vxe.model = ArchConfig::Vxe::Model::Rtl;
  else
    r.fail(vxe["model"], "vxe.model", "expected approx or rtl, got '" + model + "'");
  a.vxe.chains = r.get_bool(vxe, "chains", "vxe", a.vxe.chains);
  a.vxe.ops = default_vxe_ops();
  if (YAML::Node ops = vxe["ops"]) {
    std::vector<std::string> names;
    for (const auto& [k, v] : a.vxe.ops) names.push_back(k);
    r.check_keys(ops, "vxe.ops", names);
    for (auto it = ops.begin(); it != ops.end(); ++it) {
      std::string op = it->first.as<std::string>();
      std::string path = "vxe.ops." + op;
      r.check_keys(it->second, path, {"latency", "ii"});
      VxeOpTiming t = a.vxe.ops[op];
      t.latency = static_cast<int>(r.get_int(it->second, "latency", path, t.latency));
      r.check_range(it->second, "latency", path, t.latency, 0, 1 << 16);
      t.ii = r.get_double(it->second, "ii", path, t.ii);
      r.check_range(it->second, "ii", path, t.ii, 0.01, 1 << 16);
      a.vxe.ops[op] = t;
    }
  }
}

void resolve_sxe(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node sxe = section(
      r, root, "sxe",
      {"mac_trees", "lanes", "pipeline_depth", "queue_depth", "streams", "model", "dequant_cycles", "packed_lanes"},
      true);
  a.sxe.mac_trees = static_cast<int>(r.get_int(sxe, "mac_trees", "sxe"));
  r.check_range(sxe, "mac_trees", "sxe", a.sxe.mac_trees, 1, 1 << 16);
  a.sxe.lanes = static_cast<int>(r.get_int(sxe, "lanes", "sxe"));
  r.check_range(sxe, "lanes", "sxe", a.sxe.lanes, 1, 1 << 16);
  a.sxe.pipeline_depth = static_cast<int>(r.get_int(sxe, "pipeline_depth", "sxe", a.sxe.pipeline_depth));
  r.check_range(sxe, "pipeline_depth", "sxe", a.sxe.pipeline_depth, 1, 1024);
  a.sxe.queue_depth = static_cast<int>(r.get_int(sxe, "queue_depth", "sxe", a.sxe.queue_depth));
  r.check_range(sxe, "queue_depth", "sxe", a.sxe.queue_depth, 1, 4096);
  a.sxe.streams = static_cast<int>(r.get_int(sxe, "streams", "sxe", a.sxe.streams));
  r.check_range(sxe, "streams", "sxe", a.sxe.streams, 1, 64);
  std::string model = r.get_string(sxe, "model", "sxe", "approx");
  if (model == "approx")
    a.sxe.model = ArchConfig::Sxe::Model::Approx;
  else if (model == "rtl")
    a.sxe.model = ArchConfig::Sxe::Model::Rtl;
  else
    r.fail(sxe["model"], "sxe.model", "expected approx or rtl, got '" + model + "'");
  a.sxe.dequant_cycles = static_cast<int>(r.get_int(sxe, "dequant_cycles", "sxe", a.sxe.dequant_cycles));
  r.check_range(sxe, "dequant_cycles", "sxe", a.sxe.dequant_cycles, 0, 1024);
  if (YAML::Node pl = sxe["packed_lanes"]) {  // {int8: 2, int4: 4, fp8_e4m3: 2}, each optional
    const std::vector<std::string> formats = {"int8", "int4", "fp8_e4m3"};
    r.check_keys(pl, "sxe.packed_lanes", formats);
    for (const auto& f : formats) {
      if (!pl[f]) continue;
      const int v = static_cast<int>(r.get_int(pl, f, "sxe.packed_lanes"));
      r.check_range(pl, f, "sxe.packed_lanes", v, 1, 64);
      if (v != 1) a.sxe.packed_lanes[f] = v;
    }
  }
}

void resolve_isu(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node isu =
      section(r, root, "isu", {"issue_cycles", "chaining", "weight_prefetch", "prefetch_depth", "lookahead"}, false);
  a.isu.chaining = r.get_bool(isu, "chaining", "isu", a.isu.chaining);
  a.isu.weight_prefetch = r.get_bool(isu, "weight_prefetch", "isu", a.isu.weight_prefetch);
  a.isu.issue_cycles = static_cast<int>(r.get_int(isu, "issue_cycles", "isu", a.isu.issue_cycles));
  r.check_range(isu, "issue_cycles", "isu", a.isu.issue_cycles, 0, 1024);
  a.isu.prefetch_depth = static_cast<int>(r.get_int(isu, "prefetch_depth", "isu", a.isu.prefetch_depth));
  r.check_range(isu, "prefetch_depth", "isu", a.isu.prefetch_depth, 1, 64);
  a.isu.lookahead = static_cast<int>(r.get_int(isu, "lookahead", "isu", a.isu.lookahead));
  r.check_range(isu, "lookahead", "isu", a.isu.lookahead, 1, 256);
}

void resolve_esl(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node esl = section(r, root, "esl", {"latency_ns", "bandwidth_gbps"}, false);
  a.esl.latency_ns = r.get_double(esl, "latency_ns", "esl", a.esl.latency_ns);
  r.check_range(esl, "latency_ns", "esl", a.esl.latency_ns, 0, 1e9);
  a.esl.bandwidth_gbps = r.get_double(esl, "bandwidth_gbps", "esl", a.esl.bandwidth_gbps);
  r.check_range(esl, "bandwidth_gbps", "esl", a.esl.bandwidth_gbps, 0.001, 1e6);
}

void resolve_host(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node host = section(r, root, "host", {"link_gbps", "latency_us", "op_us"}, false);
  a.host.link_gbps = r.get_double(host, "link_gbps", "host", a.host.link_gbps);
  r.check_range(host, "link_gbps", "host", a.host.link_gbps, 0.001, 1e5);
  a.host.latency_us = r.get_double(host, "latency_us", "host", a.host.latency_us);
  r.check_range(host, "latency_us", "host", a.host.latency_us, 0, 1e6);
  a.host.op_us = r.get_double(host, "op_us", "host", a.host.op_us);
  r.check_range(host, "op_us", "host", a.host.op_us, 0, 1e6);
}

void resolve_sim(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  YAML::Node sim = section(r, root, "sim", {"max_us", "max_wall_s", "memoize"}, false);
  a.sim.max_us = r.get_double(sim, "max_us", "sim", a.sim.max_us);
  r.check_range(sim, "max_us", "sim", a.sim.max_us, 1e-3, 1e12);
  a.sim.max_wall_s = r.get_double(sim, "max_wall_s", "sim", a.sim.max_wall_s);
  r.check_range(sim, "max_wall_s", "sim", a.sim.max_wall_s, 1e-3, 1e7);
  a.sim.memoize = r.get_bool(sim, "memoize", "sim", a.sim.memoize);
}

std::vector<ConfigSection>& extension_sections() {
  static std::vector<ConfigSection> s;
  return s;
}

void resolve_extensions(YamlReader& r, const YAML::Node& root, ArchConfig& a) {
  for (const ConfigSection& ext : extension_sections()) {
    std::vector<std::string> names;
    for (const auto& k : ext.keys) names.push_back(k.name);
    YAML::Node n = section(r, root, ext.name.c_str(), names, false);
    auto& values = a.extensions[ext.name];
    for (const auto& k : ext.keys) {
      double v = r.get_double(n, k.name, ext.name, k.fallback);
      r.check_range(n, k.name, ext.name, v, k.lo, k.hi);
      values[k.name] = v;
    }
  }
}

ArchConfig resolve(YamlDoc& doc) {
  YamlReader r(doc);
  const YAML::Node& root = doc.root;
  std::vector<std::string> sections = {"name", "clock_ghz", "devices", "hbm", "memory", "dma",    "lmu",
                                       "vxe",  "sxe",       "isu",     "esl", "host",   "energy", "sim"};
  for (const ConfigSection& ext : extension_sections()) sections.push_back(ext.name);
  r.check_keys(root, "", sections);
  ArchConfig a;
  a.file = doc.file;
  a.name = r.get_string(root, "name", "", std::filesystem::path(doc.file).stem().string());
  a.clock_ghz = r.get_double(root, "clock_ghz", "");
  r.check_range(root, "clock_ghz", "", a.clock_ghz, 0.01, 10);
  a.devices = static_cast<int>(r.get_int(root, "devices", ""));
  r.check_range(root, "devices", "", a.devices, 1, 1024);
  resolve_hbm(r, root, a);
  resolve_memory(r, root, a);
  resolve_dma(r, root, a);
  resolve_lmu(r, root, a);
  resolve_vxe(r, root, a);
  resolve_sxe(r, root, a);
  resolve_isu(r, root, a);
  resolve_esl(r, root, a);
  resolve_host(r, root, a);
  resolve_energy(r, root, a.energy);
  resolve_sim(r, root, a);
  resolve_extensions(r, root, a);
  return a;
}

}  // namespace

ArchConfig load_arch_config_string(const std::string& yaml, const std::string& name,
                                   const std::vector<std::string>& overrides) {
  YamlDoc doc = load_yaml_string(yaml, name);
  for (const auto& o : overrides) apply_override(doc, o);
  return resolve(doc);
}

PreparsedArchConfig::PreparsedArchConfig(std::string yaml, std::string name)
    : yaml_(std::move(yaml)), name_(std::move(name)) {
  try {
    doc_ = std::make_shared<const YamlDoc>(load_yaml_string(yaml_, name_));
  } catch (const InputError&) {
    // load() parses again and throws the same error.
  }
}

ArchConfig PreparsedArchConfig::load(const std::vector<std::string>& overrides) const {
  if (!doc_) return load_arch_config_string(yaml_, name_, overrides);
  try {
    YamlDoc copy{doc_->file, YAML::Clone(doc_->root), doc_->overrides, doc_->override_prefix};
    for (const auto& o : overrides) apply_override(copy, o);
    return resolve(copy);
  } catch (const InputError&) {
    // YAML::Clone does not keep the nodes' line numbers, which the message names: it is the
    // one a fresh parse gives. Rejections end a check, so this parses once per failing caller.
    return load_arch_config_string(yaml_, name_, overrides);
  }
}

namespace {
std::string assignment_key(const std::string& a) { return a.substr(0, a.find('=')); }

// Whether assigning `keys` again, in order, over a document they were already assigned in
// leaves what assigning them once would: not when one key lies inside another (`hbm` and
// `hbm.channels`), whose earlier value the walk to the inner key would pass through.
bool reassignable(const std::vector<std::string>& keys) {
  for (const auto& a : keys)
    for (const auto& b : keys)
      if (a != b && b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '.') return false;
  return true;
}
}  // namespace

ArchConfig PreparsedArchConfig::load(const std::vector<std::string>& fixed,
                                     const std::vector<std::string>& varying) const {
  std::vector<std::string> all = fixed;
  all.insert(all.end(), varying.begin(), varying.end());
  if (!doc_) return load_arch_config_string(yaml_, name_, all);
  std::vector<std::string> keys;
  for (const auto& v : varying) keys.push_back(assignment_key(v));
  try {
    if (!work_ || fixed != work_fixed_ || keys != work_keys_ || !reassignable(keys)) {
      work_.reset();
      auto w = std::make_shared<YamlDoc>(
          YamlDoc{doc_->file, YAML::Clone(doc_->root), doc_->overrides, doc_->override_prefix});
      for (const auto& o : fixed) apply_override(*w, o);
      work_ = w;
      work_fixed_ = fixed;
      work_keys_ = keys;
    }
    for (const auto& o : varying) apply_override(*work_, o);
    // The assignments a rejection names: these, not every earlier value of the keys.
    work_->overrides = doc_->overrides;
    work_->overrides.insert(work_->overrides.end(), all.begin(), all.end());
    return resolve(*work_);
  } catch (const InputError&) {
    // As in load(): the message with its line is the fresh parse's. A failed assignment may
    // have left the copy half assigned: it is made again next time.
    work_.reset();
    return load_arch_config_string(yaml_, name_, all);
  }
}

ArchConfig load_arch_config(const std::string& path, const std::vector<std::string>& overrides) {
  YamlDoc doc = load_yaml_file(path);
  for (const auto& o : overrides) apply_override(doc, o);
  return resolve(doc);
}

const std::vector<std::string>& energy_vxe_classes() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> v;
    auto add = [&](const std::string& cls) {
      if (std::find(v.begin(), v.end(), cls) == v.end()) v.push_back(cls);
    };
#define LPU_ENERGY_CLASS(name, arity, cls, ...) add(#cls);
    LPU_SCALAR_OPS(LPU_ENERGY_CLASS)
#undef LPU_ENERGY_CLASS
    add("reduce");
    add("mov");
    return v;
  }();
  return c;
}

const std::vector<std::string>& energy_engines() {
  static const std::vector<std::string> e = {"hbm", "sxe", "vxe", "lmu", "dma", "esl", "isu"};
  return e;
}

double ArchConfig::Energy::vxe_pj(const std::string& op_class) const {
  auto it = vxe_pj_per_op.find(op_class);
  return it == vxe_pj_per_op.end() ? 0.0 : it->second;
}

double ArchConfig::Energy::static_w(const std::string& engine) const {
  auto it = static_mw.find(engine);
  return it == static_mw.end() ? 0.0 : it->second * 1e-3;
}

const char* sxe_model_name(ArchConfig::Sxe::Model m) { return m == ArchConfig::Sxe::Model::Rtl ? "rtl" : "approx"; }

std::string default_config_name() { return "lpu-small"; }

std::string resolve_config_path(const std::string& name_or_path) {
  std::error_code ec;  // a name too long for the filesystem (ENAMETOOLONG) names no file
  if (std::filesystem::is_regular_file(name_or_path, ec)) return name_or_path;
  for (const std::string& dir : {std::string("configs"), std::string(LPU_SOURCE_DIR) + "/configs"}) {
    std::string cand = dir + "/" + name_or_path + ".yaml";
    if (std::filesystem::is_regular_file(cand, ec)) return cand;
  }
  std::string shown = name_or_path.size() > 256
                          ? strcat(name_or_path.substr(0, 64), "... (", name_or_path.size(), " bytes)")
                          : name_or_path;
  if (std::string what = not_a_regular_file(name_or_path); !what.empty())
    throw InputError(strcat("config '", shown, "': ", what));
  throw InputError(
      strcat("config '", shown, "': no such file, and no configs/", shown, ".yaml (see `lpu list configs`)"));
}

ConfigSectionRegistration::ConfigSectionRegistration(ConfigSection section) {
  extension_sections().push_back(std::move(section));
}

double ArchConfig::extension(const std::string& section, const std::string& key) const {
  auto s = extensions.find(section);
  if (s == extensions.end() || !s->second.count(key))
    throw InternalError(strcat("arch config: no extension key ", section, ".", key));
  return s->second.at(key);
}

nlohmann::json arch_to_json(const ArchConfig& a) {
  nlohmann::json j;
  j["name"] = a.name;
  j["file"] = a.file;
  j["clock_ghz"] = a.clock_ghz;
  j["devices"] = a.devices;
  j["hbm"] = {{"bandwidth_gbps", a.hbm.bandwidth_gbps}, {"channels", a.hbm.channels},
              {"capacity_gib", a.hbm.capacity_gib},     {"latency_ns", a.hbm.latency_ns},
              {"burst_bytes", a.hbm.burst_bytes},       {"interleave_bytes", a.hbm.interleave_bytes},
              {"efficiency", a.hbm.efficiency}};
  if (a.memory.model == ArchConfig::Memory::Model::Banks) j["memory"] = memory_to_json(a.memory);
  j["dma"] = {{"engines", a.dma.engines}, {"setup_cycles", a.dma.setup_cycles}, {"queue_depth", a.dma.queue_depth}};
  j["lmu"] = {{"capacity_kib", a.lmu.capacity_kib},
              {"banks", a.lmu.banks},
              {"bytes_per_cycle", a.lmu.bytes_per_cycle},
              {"double_buffer", a.lmu.double_buffer}};
  nlohmann::json ops;
  for (const auto& [k, t] : a.vxe.ops) ops[k] = {{"latency", t.latency}, {"ii", t.ii}};
  j["vxe"] = {{"lanes", a.vxe.lanes}, {"queue_depth", a.vxe.queue_depth}, {"ops", ops}};
  if (a.vxe.model == ArchConfig::Vxe::Model::Rtl) j["vxe"]["model"] = "rtl";  // absent: approx (JSON unchanged)
  j["sxe"] = {{"mac_trees", a.sxe.mac_trees},     {"lanes", a.sxe.lanes},     {"pipeline_depth", a.sxe.pipeline_depth},
              {"queue_depth", a.sxe.queue_depth}, {"streams", a.sxe.streams}, {"model", sxe_model_name(a.sxe.model)}};
  // The packed-weight keys only when set (configs without them keep the JSON, and the sweep
  // fingerprints made from it, they always had).
  const ArchConfig::Sxe dflt;
  if (a.sxe.dequant_cycles != dflt.dequant_cycles) j["sxe"]["dequant_cycles"] = a.sxe.dequant_cycles;
  for (const auto& [f, v] : a.sxe.packed_lanes) j["sxe"]["packed_lanes"][f] = v;
  j["isu"] = {{"issue_cycles", a.isu.issue_cycles},
              {"chaining", a.isu.chaining},
              {"weight_prefetch", a.isu.weight_prefetch},
              {"prefetch_depth", a.isu.prefetch_depth},
              {"lookahead", a.isu.lookahead}};
  j["esl"] = {{"latency_ns", a.esl.latency_ns}, {"bandwidth_gbps", a.esl.bandwidth_gbps}};
  j["host"] = {{"link_gbps", a.host.link_gbps}, {"latency_us", a.host.latency_us}, {"op_us", a.host.op_us}};
  if (a.energy.configured) {
    const auto& e = a.energy;
    nlohmann::json vx = nlohmann::json::object(), st = nlohmann::json::object();
    for (const auto& [k, v] : e.vxe_pj_per_op) vx[k] = v;
    for (const auto& [k, v] : e.static_mw) st[k] = v;
    j["energy"] = {{"hbm_read_pj_per_bit", e.hbm_read_pj_per_bit},
                   {"hbm_write_pj_per_bit", e.hbm_write_pj_per_bit},
                   {"sxe_pj_per_mac", e.sxe_pj_per_mac},
                   {"vxe_pj_per_op", vx},
                   {"lmu_read_pj_per_byte", e.lmu_read_pj_per_byte},
                   {"lmu_write_pj_per_byte", e.lmu_write_pj_per_byte},
                   {"esl_pj_per_bit", e.esl_pj_per_bit},
                   {"static_mw", st}};
    if (e.sxe_pj_per_dequant != 0) j["energy"]["sxe_pj_per_dequant"] = e.sxe_pj_per_dequant;
  }
  // sim.max_wall_s is left out: it decides only whether a run may finish, never what it
  // computes, and this JSON fingerprints sweeps (a longer limit must not make a sweep new).
  // So is sim.memoize: it decides how fast a run is, never its statistics.
  j["sim"] = {{"max_us", a.sim.max_us}};
  for (const auto& [section, keys] : a.extensions) j[section] = keys;  // none without extensions
  return j;
}

}  // namespace lpu
