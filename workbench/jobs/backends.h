// The backends of `lpu compile --emit`: every artefact the compiler can print or write, listed
// once. `--emit`, its `--help` text, the tests and the benches enumerate this list, so a new
// backend (an ops handler over the loop IR, a printer) is one entry here and nothing in the CLI.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "jobs/jobs.h"

namespace lpu {

// What a backend renders from: the workload, its compilation and the arch it was compiled for.
struct EmitContext {
  const WorkloadSpec& workload;
  const Compilation& comp;
  const ArchConfig& arch;
};

struct Backend {
  std::string name;                // the --emit name
  std::vector<std::string> files;  // what it writes under -o DIR (the first is its text)
  std::string help;                // shown after the name in --help ("" : the name alone)
  bool lowers = true;              // needs the loop IR (graph and core do not)
  bool binary = false;             // binary output: only with -o DIR
  // Its text; unset for a backend that writes its own files (`write`).
  std::function<std::string(const EmitContext&)> render;
  // Writes its files into DIR and returns the line that says so (triton-data).
  std::function<std::string(const EmitContext&, const std::string& dir)> write;
  std::string companion;  // written along with it under -o DIR (schedule: its JSON)
  // With devices > 1, one file per further device: "program.devN" + suffix, from that device's
  // program (asm, bin); "" : rank 0's artefact only.
  std::string per_device_suffix;
  std::function<std::string(const Program&)> render_program;
};

// Every backend, in the order --help lists them.
const std::vector<Backend>& backends();
// The backend of that --emit name, or nullptr.
const Backend* find_backend(const std::string& name);
// "graph, core, ...": the names, for errors.
std::string backend_names();
// The --emit help text: "comma-separated: graph, core, ..., triton (triton_kernels.py), ...".
std::string emit_help();

struct CompileRequest {
  WorkloadSpec workload;
  ArchConfig arch;
  std::string fusion = "greedy";
  // Graph-break options, read only when a backend needs the program (a bad --on-unsupported
  // fails only then, as before the registry).
  std::function<BreakOptions()> breaks;
  std::string emit = "asm";  // comma-separated backend names
  std::string outdir;        // "" : print to `out`
};

// `lpu compile`: runs only the stages the backends asked for need (graph and core work for
// graphs the back end cannot lower yet), then prints or writes every artefact.
int compile_command(const CompileRequest& r, std::ostream& out);

// `lpu compile` without files (the Python module): each asked backend's text, by name, in the
// order asked. Binary backends and those that write their own files need a directory, as
// --emit without -o does (InputError); so do other devices' programs. What compile_command
// prints besides (the tuner's choice) goes to `notes`.
std::vector<std::pair<std::string, std::string>> compile_texts(const CompileRequest& r, std::ostream& notes);

}  // namespace lpu
