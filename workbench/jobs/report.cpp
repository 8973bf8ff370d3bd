#include "jobs/report.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "process/proc.h"
#include "support/error.h"
#include "support/input_file.h"

#ifndef LPU_SOURCE_DIR
#define LPU_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace lpu {

std::string find_report_script() {
  fs::path exe_dir = fs::path(self_exe()).parent_path();
  // The source tree first (the build links to it), then an installed layout.
  std::vector<fs::path> cands = {fs::path(LPU_SOURCE_DIR) / "reports", exe_dir / "reports", exe_dir / "../reports",
                                 exe_dir / "../share/lpu/reports"};
  if (const char* env = std::getenv("LPU_REPORTS_DIR")) cands.insert(cands.begin(), env);
  for (const auto& d : cands)
    if (fs::is_regular_file(d / "lpu_report.py")) return (d / "lpu_report.py").lexically_normal().string();
  std::string tried;
  for (const auto& d : cands) tried += " " + d.string();
  throw InputError("cannot find reports/lpu_report.py (looked in" + tried + "; set LPU_REPORTS_DIR)");
}

std::string find_python() {
  static std::string found;
  if (!found.empty()) return found;
  // Debian's interpreter has python3-matplotlib; a python3 earlier in PATH (pyenv, venv)
  // often does not, so it is only the fallback.
  std::vector<std::string> cands = {"/usr/bin/python3", "python3"};
  if (const char* env = std::getenv("LPU_PYTHON")) cands.insert(cands.begin(), env);
  for (const auto& py : cands) {
    ChildSpec c;
    c.argv = {py, "-c", "import matplotlib, numpy"};
    c.stdout_path = "/dev/null";
    c.stderr_path = "/dev/null";
    if (run_child(c).ok()) return found = py;
  }
  throw InputError(
      "lpu report needs Python 3 with matplotlib and numpy; none of /usr/bin/python3, python3 (or $LPU_PYTHON) "
      "can import them. On Debian: apt-get install python3-matplotlib python3-numpy (scripts/install-deps.sh)");
}

int report_command(const ReportOptions& opts) {
  if (opts.inputs.empty()) throw InputError("report: no input given");
  for (const auto& in : opts.inputs)
    if (std::string problem = input_path_problem(in, true); !problem.empty())
      throw InputError("report: " + in + ": " + problem);
  ChildSpec c;
  c.argv = {find_python(), find_report_script()};
  c.argv.insert(c.argv.end(), opts.inputs.begin(), opts.inputs.end());
  c.argv.insert(c.argv.end(), {"-o", opts.out_dir});
  if (!opts.json.empty()) c.argv.insert(c.argv.end(), {"--json", opts.json});
  if (!opts.cost.empty()) c.argv.insert(c.argv.end(), {"--cost", opts.cost});
  std::cout << std::flush;  // our table before the script's lines
  ChildExit e = run_child(c);
  if (e.code == 0 || e.code == 2) return e.code;
  throw InternalError("the report script failed (" + e.describe() + ")");
}

nlohmann::json trace_json_for(const RunOutcome& run) {
  nlohmann::json t = trace_to_json(run.sim.trace);
  t["otherData"] = {{"workload", run.workload.name}, {"fusion", run.fusion}, {"arch", run.arch.name},
                    {"latency_us", run.sim.stats.latency_us}};
  return t;
}

int write_compare_report(const nlohmann::json& compare, const std::vector<RunOutcome>& runs, const std::string& dir) {
  fs::create_directories(dir + "/traces");
  ReportOptions o;
  o.out_dir = dir;
  o.inputs.push_back(dir + "/compare.json");
  std::ofstream(o.inputs.back()) << compare.dump(2) << "\n";
  for (const auto& r : runs) {
    o.inputs.push_back(dir + "/traces/" + r.fusion + ".json");
    std::ofstream(o.inputs.back()) << trace_json_for(r).dump() << "\n";
  }
  int rc = report_command(o);
  return rc;
}

}  // namespace lpu
