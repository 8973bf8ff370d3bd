// The kind of value every option of every subcommand takes, in one table (kRules), and its two
// readers: the checks every command gets before it runs (an output path or a count is checked
// because of its kind, not because its command remembered to), and `lpu cli-spec` (hidden from
// --help), which lists them all as JSON for tests/badinput/cli_classes_test.py; that test crosses
// every path and number argument with the classes of bad input (docs/robustness.md), so a new
// subcommand or flag is tried without anyone listing it. An option the table does not classify
// is listed as "unknown", and the test fails, naming the option, until it is added here.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
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
// count        a whole number >= 1          count0   a whole number >= 0
// time         a time >= 0 (--timeout: 0 is no limit)
// rate         a number > 0 (a rate, a bandwidth, a latency target)
// integer      any whole number (a seed)
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
    {"", "--perfetto", "output-file"},
    {"", "--vcd", "output-file", "vcd"},
    {"", "--report", "output-dir"},
    {"", "--out", "output-dir"},
    {"", "--prompt-len", "count"},
    {"", "--gen-len", "count"},
    {"", "--jobs", "count"},
    {"", "--timeout", "time"},
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
    // serve (docs/serving.md)
    {"serve", "workload", "input", "llm"},
    {"", "--trace-file", "input", "serve-trace"},
    {"", "--cost-cache", "input", "cost-cache"},  // read when it exists, then written
    {"", "--rate", "rate"},
    {"", "--requests", "count"},
    {"", "--seed", "integer"},
    {"", "--arrivals", "text"},
    {"", "--prompt", "text"},  // a length spec (N, uniform:MIN:MAX, ...)
    {"", "--output", "text"},
    {"", "--router", "text"},
    {"", "--max-batched-tokens", "count"},
    {"", "--max-seqs", "count"},
    {"", "--chunk-size", "count"},
    {"", "--block-size", "count"},
    {"", "--replicas", "count"},
    {"", "--prefill-replicas", "count0"},
    {"", "--prefill-gpu", "input", "gpu-config"},
    {"", "--link-gbps", "rate"},
    {"", "--link-latency-us", "time"},
    {"", "--slo-ttft-ms", "rate"},
    {"", "--slo-tpot-ms", "rate"},
    {"", "--error-samples", "count0"},
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

// A number as its kind promises, from the text given (CLI11 lets NaN, infinities and, for some
// integer types, values past their range through): "" when it is, else what was expected.
std::string number_problem(const std::string& kind, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  if (kind == "rate" || kind == "time") {
    double v = std::strtod(text.c_str(), &end);
    bool ok = end != text.c_str() && *end == '\0' && std::isfinite(v) && (kind == "rate" ? v > 0 : v >= 0);
    return ok ? "" : kind == "rate" ? "a number > 0" : "a number >= 0";
  }
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE) return "a whole number below 2^63";
  if (kind == "count" && v < 1) return ">= 1";
  if (kind == "count0" && v < 0) return ">= 0";
  return "";
}

bool is_number_kind(const std::string& kind) {
  return kind == "count" || kind == "count0" || kind == "integer" || kind == "rate" || kind == "time";
}

// The flag as the messages name it: -o rather than --out.
std::string flag_name(const CLI::Option& opt) {
  return opt.get_snames().empty() ? opt.get_name() : "-" + opt.get_snames().front();
}

void check_numbers_of(CLI::App& sub) {
  for (CLI::Option* opt : sub.get_options()) {
    const KindRule* rule = opt->count() > 0 ? rule_of(sub, *opt) : nullptr;
    if (!rule || !is_number_kind(rule->kind)) continue;
    for (const std::string& text : opt->results())
      if (std::string expected = number_problem(rule->kind, text); !expected.empty())
        throw InputError(strcat(flag_name(*opt), ": expected ", expected, ", got ", text));
  }
  for (CLI::App* s : sub.get_subcommands()) check_numbers_of(*s);
}

void check_output_paths_of(CLI::App& sub) {
  for (CLI::Option* opt : sub.get_options()) {
    const KindRule* rule = opt->count() > 0 ? rule_of(sub, *opt) : nullptr;
    if (!rule || std::string(rule->kind).rfind("output-", 0) != 0) continue;
    std::string flag = flag_name(*opt);
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

void check_arguments(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    check_numbers_of(*sub);
    check_output_paths_of(*sub);
  }
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
