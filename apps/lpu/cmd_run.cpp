// `lpu run WORKLOAD`: compile and simulate one workload (or a manifest of graph files).
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/cli_support.h"
#include "jobs/manifest.h"
#include "jobs/report.h"
#include "jobs/run_report.h"
#include "policy_registry.h"
#include "support/error.h"

namespace lpu::cli {

namespace {

struct RunFlags {
  std::string workload, fusion = "greedy", json, trace, vcd;
  bool functional = false;
  ArchFlags af;
  BreakFlags bf;
};

int run_manifest_file(const RunFlags& f) {
  if (!f.trace.empty() || !f.vcd.empty()) throw InputError("--trace and --vcd take one graph, not a manifest");
  ManifestRun r = run_manifest(load_manifest(f.workload), f.af.load_without_workload("a manifest of graph files"),
                               f.fusion, f.functional, f.bf.get());
  std::cout << format_manifest_run(r);
  if (!f.json.empty()) write_json(f.json, r.to_json());
  if (f.functional && !r.functional_ok) throw CheckFailed("functional check failed in a graph of " + f.workload);
  return 0;
}

int run(const RunFlags& f) {
  check_output_file("--json", f.json);
  check_output_file("--trace", f.trace);
  check_output_file("--vcd", f.vcd);
  if (is_manifest_file(f.workload)) return run_manifest_file(f);  // several graphs from torch.compile
  WorkloadSpec w = resolve_workload(f.workload, f.af.workload_sets());
  ArchConfig arch = f.af.load();
  RunOutcome o = run_job(w, arch, f.fusion, f.functional, !f.trace.empty(), f.bf.get(), f.vcd);
  std::cout << format_run(o, f.af.arch_sets());
  if (!f.json.empty()) write_json(f.json, o.to_json());
  if (!f.trace.empty()) write_json(f.trace, trace_json_for(o));
  if (o.check) {
    std::cout << format_functional_check(*o.check);
    if (!o.check->ok) throw CheckFailed("functional check failed: worst element " + o.check->worst);
  }
  return 0;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  auto* run_app = app.add_subcommand("run", "compile and simulate one workload");
  run_app->add_option("workload", f->workload, kWorkloadHelp)->required();
  f->af.add(run_app);
  f->af.add_tp(run_app);
  f->bf.add(run_app);
  run_app->add_option("--fusion", f->fusion, "fusion policy: " + policy_names() + " (docs/scheduling.md)")
      ->capture_default_str();
  run_app->add_flag(
      "--functional", f->functional,
      "simulate with real data and compare with the reference executor (graph files: with PyTorch's outputs)");
  run_app->add_option("--json", f->json, "write statistics as JSON");
  run_app->add_option("--trace", f->trace, "write a Chrome/Perfetto trace-event timeline");
  run_app->add_option("--vcd", f->vcd, "write a VCD waveform of engine queue occupancy, busy workers, in-flight count");
  return {run_app, [f] { return run(*f); }};
}

}  // namespace lpu::cli
