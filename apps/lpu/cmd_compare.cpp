// `lpu compare WORKLOAD --fusion a,b,...`: one workload under several fusion policies.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/cli_support.h"
#include "jobs/compare.h"

namespace lpu::cli {

namespace {

struct CompareFlags {
  std::string workload, policies = "none,greedy", json, report;
  bool functional = false;
  ArchFlags af;
  BreakFlags bf;
};

int compare(const CompareFlags& f) {
  check_output_file("--json", f.json);
  check_output_dir("--report", f.report);
  CompareRequest r;
  r.workload = resolve_workload(f.workload, f.af.workload_sets());
  r.arch = f.af.load();
  r.arch_overrides = f.af.arch_sets();
  r.policies = f.policies;
  r.functional = f.functional;
  r.json = f.json;
  r.report = f.report;
  if (isatty(STDERR_FILENO)) r.progress = &std::cerr;  // long runs say what they are doing, on a terminal only
  // The graph-break flags are read once the policies are known to be valid, as before.
  compare_policy_names(r.policies);
  r.breaks = f.bf.get();
  return compare_command(r, std::cout);
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  auto* cmp = app.add_subcommand("compare", "run one workload under several fusion policies, side by side");
  cmp->add_option("workload", f->workload, kWorkloadHelp)->required();
  f->af.add(cmp);
  f->af.add_tp(cmp);
  f->bf.add(cmp);
  cmp->add_option("--fusion", f->policies, "comma-separated policies")->capture_default_str();
  cmp->add_flag("--functional", f->functional, "also check every policy's outputs against the reference");
  cmp->add_option("--json", f->json, "write all runs as JSON");
  cmp->add_option("--report", f->report, "also write an HTML report with plots and timelines into this directory");
  return {cmp, [f] { return compare(*f); }};
}

}  // namespace lpu::cli
