// `lpu generate WORKLOAD` (docs/generate.md): a whole generation, prefill then decode steps.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <thread>

#include "cli.h"
#include "generate/generate.h"
#include "jobs/cli_support.h"

namespace lpu::cli {

namespace {

struct GenerateFlags {
  std::string workload, fusion = "greedy", json, csv;
  ArchFlags af;
  BreakFlags bf;
  int64_t prompt_len = 0, gen_len = 0;
  int jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 64u));
  CLI::Option *prompt = nullptr, *gen = nullptr;
  bool no_symbolic = false, no_regional = false, explain = false;
};

// Flags over the workload's prompt_len/gen_len keys.
int generate(const GenerateFlags& f) {
  GenerateOptions o;
  if (f.prompt->count()) o.prompt_len = f.prompt_len;
  if (f.gen->count()) o.gen_len = f.gen_len;
  o.symbolic = !f.no_symbolic;
  o.regional = !f.no_regional;
  if (f.explain) o.explain = &std::cerr;
  check_output_file("--json", f.json);
  check_output_file("--csv", f.csv);
  WorkloadSpec w = resolve_workload(f.workload, f.af.workload_sets());
  ArchConfig arch = f.af.load();
  o.fusion = f.fusion;
  o.breaks = f.bf.get();
  o.progress = &std::cout;
  o.progress_bar = isatty(STDOUT_FILENO);
  o.jobs = f.jobs;
  CompileCache cache;
  GenerateResult r = run_generate(w, arch, o, cache);
  r.arch_overrides = f.af.arch_sets();
  std::cout << r.summary();
  if (!f.json.empty()) write_json(f.json, r.to_json());
  if (!f.csv.empty()) write_file(f.csv, r.to_csv());
  return 0;
}

}  // namespace

Command add_generate(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  auto* gen =
      app.add_subcommand("generate", "simulate a whole generation: the prefill, then one decode step per token");
  gen->add_option("workload", f->workload, "a built-in LLM (lpu list workloads) or a workload YAML naming one")
      ->required();
  f->af.add(gen);
  f->bf.add(gen);
  gen->add_option("--fusion", f->fusion, "fusion policy: none | greedy | search")->capture_default_str();
  f->prompt =
      gen->add_option("--prompt-len", f->prompt_len, "prompt tokens (default: the workload's prompt_len, else 32)");
  f->gen = gen->add_option("--gen-len", f->gen_len, "tokens to generate (default: the workload's gen_len, else 32)");
  gen->add_flag("--no-symbolic", f->no_symbolic,
                "compile every decode step (no symbolic context, guards or instantiation)");
  gen->add_flag("--no-regional", f->no_regional,
                "compile whole models (no regional compilation: the repeated decoder layer compiled once and "
                "instantiated per layer)");
  gen->add_flag("--explain-recompiles", f->explain,
                "print why each decode step was recompiled: which guard failed and why (to stderr)");
  gen->add_option("-j,--jobs", f->jobs,
                  "processes simulating steps at once (forked copies, while this one compiles the next steps; "
                  "the figures do not change; default: the CPU count)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  gen->add_option("--json", f->json, "write every metric and every step as JSON");
  gen->add_option("--csv", f->csv, "write one row per step as CSV");
  return {gen, [f] { return generate(*f); }};
}

}  // namespace lpu::cli
