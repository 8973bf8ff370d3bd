// `lpu compile WORKLOAD --emit ...`: print or write the compiler's artefacts (jobs/backends.h).
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/backends.h"
#include "jobs/cli_support.h"
#include "policy_registry.h"

namespace lpu::cli {

namespace {

struct CompileFlags {
  std::string workload, fusion = "greedy", emit = "asm", outdir;
  ArchFlags af;
  BreakFlags bf;
};

int compile(const CompileFlags& f) {
  check_output_dir("-o", f.outdir);
  CompileRequest r;
  r.workload = resolve_workload(f.workload, f.af.workload_sets());
  r.arch = f.af.load();
  r.fusion = f.fusion;
  r.breaks = [&f] { return f.bf.get(); };
  r.emit = f.emit;
  r.outdir = f.outdir;
  return compile_command(r, std::cout);
}

}  // namespace

Command add_compile(CLI::App& app) {
  auto f = std::make_shared<CompileFlags>();
  auto* comp = app.add_subcommand("compile", "compile a workload and print or write its IRs");
  comp->add_option("workload", f->workload, kWorkloadHelp)->required();
  f->af.add(comp);
  f->bf.add(comp);
  comp->add_option("--fusion", f->fusion, "fusion policy: " + policy_names() + " (docs/scheduling.md)")
      ->capture_default_str();
  comp->add_option("--emit", f->emit, emit_help())->capture_default_str();
  comp->add_option("-o,--out", f->outdir, "directory to write into (default: stdout)");
  return {comp, [f] { return compile(*f); }};
}

}  // namespace lpu::cli
