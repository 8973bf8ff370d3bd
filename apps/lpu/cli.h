// What the subcommands of `lpu` share: how one is registered (a file each, cmd_*.cpp), and the
// flags several take (--arch/--set/--tp, --on-unsupported/--unsupported-ops).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/arch_config.h"
#include "tuner.h"  // BreakOptions

namespace lpu::cli {

// A subcommand: its parser, and what runs when it was given (its exit code; the errors it
// throws become exit codes in main.cpp).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// In the order `lpu --help` lists them.
Command add_run(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_report(CLI::App& app);
Command add_compile(CLI::App& app);
Command add_generate(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_check_config(CLI::App& app);
Command add_ref(CLI::App& app);
Command add_sim(CLI::App& app);
Command add_list(CLI::App& app);
// Hidden: every subcommand's options and their kinds as JSON (cli_kinds.cpp; the bad-input tests).
Command add_cli_spec(CLI::App& app);
// Every number and output path given to the subcommand that was parsed, by its kind
// (cli_kinds.cpp), before any work starts: InputError naming the flag.
void check_arguments(CLI::App& app);

inline const char* const kWorkloadHelp = "workload YAML, name in workloads/, or graph file (.json, .txt)";

struct ArchFlags {
  std::string arch = default_config_name();
  std::vector<std::string> sets;
  int tp = 0;  // --tp N: devices=N (tensor parallelism), after the --set overrides
  void add(CLI::App* app);
  void add_tp(CLI::App* app);
  // The architecture's overrides, and the workload's (`workload.KEY=VALUE`, prefix removed).
  std::vector<std::string> arch_sets() const;
  std::vector<std::string> workload_sets() const;
  ArchConfig load() const;
  // For commands without a workload YAML (a manifest of graph files, a program): no workload keys.
  ArchConfig load_without_workload(const std::string& what) const;
};

// --on-unsupported / --unsupported-ops: graph breaks (docs/graph-breaks.md).
struct BreakFlags {
  std::string on_unsupported = "error";
  std::string unsupported_ops;
  void add(CLI::App* app);
  BreakOptions get() const;
};

}  // namespace lpu::cli
