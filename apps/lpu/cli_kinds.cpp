// The kind of value every option of every subcommand takes, in one table (kRules), and its two
// readers: the output-path check every command gets before it runs (an output flag is checked
// because of its kind, not because its command remembered to), and `lpu cli-spec` (hidden from
// --help), which lists them all as JSON for tests/badinput/cli_classes_test.py; that test crosses
// every path and number argument with the classes of bad input (docs/robustness.md), so a new
// subcommand or flag is tried without anyone listing it. An option the table does not classify
// is listed as "unknown", and the test fails, naming the option, until it is added here.
#include <sys/stat.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "jobs/cli_support.h"
#include "support/error.h"

namespace lpu::cli {

namespace {

// input        a file (or directory) that is read; `format` says what it must hold
// output-file  a file that is written
// output-dir   a directory that is written into (created when missing)
// count        a whole number >= 1
// seconds      a time in seconds >= 0 (0: no limit)
// text         a name, a choice or an expression: no path and no number
struct KindRule {
  const char* command;  // "sweep merge"; "" for an option of that name in any command
  const char* option;   // the positional's name, or the option's first long name
  const char* kind;
  const char* format = "";  // inputs: arch-config, workload, llm, graph-json, program, sweep-file, ...
  bool needed = false;      // required although CLI11 does not enforce it (checked by the command)
};

// Positionals are named per command ("file" means different things); flags by name anywhere.
const KindRule kRules[] = {
    {"", "--arch", "input", "arch-config"},
    {"", "--set", "text"},
    {"", "--tp", "count"},
    {"", "--on-unsupported", "text"},
    {"", "--unsupported-ops", "text"},
    {"", "--fusion", "text"},
    {"", "--emit", "text"},
    {"", "--cost", "text"},
    {"", "--json", "output-file"},
    {"", "--csv", "output-file"},
    {"", "--trace", "output-file"},
    {"", "--vcd", "output-file", "vcd"},
    {"", "--report", "output-dir"},
    {"", "--out", "output-dir"},
    {"", "--prompt-len", "count"},
    {"", "--gen-len", "count"},
    {"", "--jobs", "count"},
    {"", "--timeout", "seconds"},
    {"", "--shard", "text"},
    {"", "--backend", "text"},
    {"", "--array-size", "count"},
    {"", "--partition", "text"},
    {"", "--time", "text"},  // slurm's time limit, passed to sbatch as written
    {"", "--mem", "text"},
    {"run", "workload", "input", "workload"},
    {"compare", "workload", "input", "workload"},
    {"compile", "workload", "input", "workload"},
    {"generate", "workload", "input", "llm"},
    {"check-config", "files", "input", "arch-config"},
    {"ref", "graph", "input", "graph-json"},
    {"sim", "programs", "input", "program"},
    {"report", "inputs", "input", "report-input"},
    {"sweep", "file", "input", "sweep-file", true},
    {"sweep", "--out", "output-dir", "", true},
    {"sweep merge", "dirs", "input", "results-dir"},
    {"list", "what", "text"},
};

const KindRule* find_rule(const std::string& command, const std::string& name, bool positional) {
  for (const auto& r : kRules)
    if (r.command == command && r.option == name) return &r;
  if (positional) return nullptr;
  for (const auto& r : kRules)
    if (std::string(r.command).empty() && r.option == name) return &r;
  return nullptr;
}

std::vector<std::string> names_of(const CLI::Option& opt) {
  std::vector<std::string> names;
  for (const auto& s : opt.get_snames()) names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) names.push_back("--" + l);
  if (opt.get_positional()) names.push_back(opt.get_name(true));
  return names;
}

nlohmann::json describe_option(const std::string& command, const CLI::Option& opt) {
  bool positional = !opt.nonpositional();
  std::string name = positional ? opt.get_name(true) : opt.get_name();
  const KindRule* rule = find_rule(command, name, positional);
  bool takes_value = opt.get_expected_max() > 0;  // a flag expects no value
  nlohmann::json j;
  j["name"] = name;
  j["names"] = names_of(opt);
  j["positional"] = positional;
  j["kind"] = !takes_value ? "flag" : rule ? rule->kind : "unknown";
  j["format"] = rule ? rule->format : "";
  j["needed"] = opt.get_required() || (rule && rule->needed);
  j["multiple"] = opt.get_expected_max() > 1;
  return j;
}

void describe_commands(CLI::App& app, const std::string& prefix, nlohmann::json& out) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_group().empty(); })) {
    std::string path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    nlohmann::json options = nlohmann::json::array();
    for (const CLI::Option* opt : sub->get_options())
      if (opt != sub->get_help_ptr() && opt != sub->get_help_all_ptr()) options.push_back(describe_option(path, *opt));
    out.push_back({{"command", path}, {"options", options}});
    describe_commands(*sub, path, out);
  }
}

std::string command_path(const CLI::App& sub) {
  std::string path = sub.get_name();
  for (const CLI::App* p = sub.get_parent(); p && p->get_parent(); p = p->get_parent())
    path = p->get_name() + " " + path;
  return path;
}

const KindRule* rule_of(const CLI::App& sub, const CLI::Option& opt) {
  bool positional = !opt.nonpositional();
  return find_rule(command_path(sub), positional ? opt.get_name(true) : opt.get_name(), positional);
}

// SystemC's VCD writer writes PATH.vcd unless PATH ends in .vcd, and a file of its own: never
// into a device or a FIFO (`--vcd /dev/null` would make /dev/null.vcd).
void check_vcd_path(const std::string& flag, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    throw InputError(
        strcat(flag, " ", path, ": cannot write: not a regular file (the VCD writer makes a file of its own)"));
  bool suffixed = path.size() > 4 && path.compare(path.size() - 4, 4, ".vcd") == 0;
  if (!suffixed) check_output_file(flag, path + ".vcd");
}

void check_output_paths_of(CLI::App& sub) {
  for (CLI::Option* opt : sub.get_options()) {
    const KindRule* rule = opt->count() > 0 ? rule_of(sub, *opt) : nullptr;
    if (!rule || std::string(rule->kind).rfind("output-", 0) != 0) continue;
    // The flag as the messages name it: -o rather than --out.
    std::string flag = opt->get_snames().empty() ? opt->get_name() : "-" + opt->get_snames().front();
    auto path = opt->as<std::string>();
    if (path.empty()) throw InputError(flag + ": empty path");  // "--json ''" is a mistake, not "no output"
    if (std::string(rule->kind) == "output-dir") {
      check_output_dir(flag, path);
    } else {
      check_output_file(flag, path);
      if (std::string(rule->format) == "vcd") check_vcd_path(flag, path);
    }
  }
  for (CLI::App* s : sub.get_subcommands()) check_output_paths_of(*s);
}

}  // namespace

void check_output_paths(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) check_output_paths_of(*sub);
}

Command add_cli_spec(CLI::App& app) {
  auto* spec = app.add_subcommand("cli-spec", "every subcommand's options and their kinds, as JSON (for the tests)");
  spec->group("");  // hidden: a test's tool, not a user's command
  CLI::App* root = &app;
  return {spec, [root] {
            nlohmann::json commands = nlohmann::json::array();
            describe_commands(*root, "", commands);
            std::cout << nlohmann::json{{"commands", commands}}.dump(1) << "\n";
            return 0;
          }};
}

}  // namespace lpu::cli
