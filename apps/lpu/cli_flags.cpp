#include "cli.h"
#include "jobs/cli_support.h"  // break_options
#include "support/error.h"
#include "workload/workload.h"

namespace lpu::cli {

void ArchFlags::add(CLI::App* app) {
  app->add_option("--arch", arch, "architecture config: a YAML path or a name in configs/")->capture_default_str();
  app->add_option("--set", sets,
                  "override a config key, e.g. --set hbm.bandwidth_gbps=230, or a workload key, e.g. "
                  "--set workload.batch=8 (repeatable)");
}

void ArchFlags::add_tp(CLI::App* app) {
  app->add_option("--tp", tp, "tensor parallelism over N devices: sets devices=N (docs/tensor-parallel.md)")
      ->check(CLI::Range(1, 1024));
}

std::vector<std::string> ArchFlags::arch_sets() const {
  std::vector<std::string> out;
  for (const auto& s : sets)
    if (s.rfind(kWorkloadKeyPrefix, 0) != 0) out.push_back(s);
  return out;
}

std::vector<std::string> ArchFlags::workload_sets() const {
  std::vector<std::string> out;
  for (const auto& s : sets)
    if (s.rfind(kWorkloadKeyPrefix, 0) == 0) out.push_back(s.substr(std::string(kWorkloadKeyPrefix).size()));
  return out;
}

ArchConfig ArchFlags::load() const {
  std::vector<std::string> s = arch_sets();
  if (tp > 0) s.push_back(strcat("devices=", tp));
  return load_arch_config(resolve_config_path(arch), s);
}

ArchConfig ArchFlags::load_without_workload(const std::string& what) const {
  if (auto w = workload_sets(); !w.empty())
    throw InputError(strcat("--set ", kWorkloadKeyPrefix, w.front(), ": ", what, " has no workload keys"));
  return load();
}

void BreakFlags::add(CLI::App* app) {
  app->add_option("--on-unsupported", on_unsupported,
                  "an op the LPU back end does not support: error (exit 2) | break (run it on the host: a graph break)")
      ->capture_default_str();
  app->add_option("--unsupported-ops", unsupported_ops,
                  "test switch: comma-separated core ops to treat as unsupported, e.g. erf,exp");
}

BreakOptions BreakFlags::get() const { return break_options(on_unsupported, unsupported_ops); }

}  // namespace lpu::cli
