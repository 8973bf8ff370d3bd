// What every function of the Python module `lpu` shares: the workload and the architecture
// from the arguments the package (python/lpu/) passes down, the errors as Python exceptions
// of the CLI's exit classes, and the jobs' JSON handed over as text.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "jobs/jobs.h"

namespace lpu::pymod {

// A workload as the package passes it: a name or a path (`yaml` empty), or a dict, as JSON
// text (JSON is YAML), with `source` naming it in messages.
struct WorkloadArg {
  std::string name_or_path, yaml, source;
};

// The `--set` assignments as the CLI splits them: `workload.KEY=VALUE` ones are the workload's
// (prefix removed), the others the architecture's.
struct Sets {
  std::vector<std::string> arch, workload;
  explicit Sets(const std::vector<std::string>& all);
};

// Through the same readers, with the same checks, as `lpu run WORKLOAD --set ...`.
WorkloadSpec load_workload(const WorkloadArg& w, const Sets& s);
// `devices = tp` after the overrides when tp > 0 (--tp).
ArchConfig load_arch(const std::string& arch, const Sets& s, int tp = 0);

// The module's exception classes (lpu.InputError ...), set once by the package on import; C++
// errors become them with the CLI's message: InputError (exit 2), CheckFailed (1),
// SimulationStuck (3), anything else InternalError (4).
void register_errors(pybind11::module_& m);

// A JSON value as the text the package parses (json.loads): the CLI's --json files are the
// same text, so the numbers are the same doubles.
std::string dump(const nlohmann::json& j);

}  // namespace lpu::pymod
