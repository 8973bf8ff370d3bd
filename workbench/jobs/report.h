// `lpu report`: an HTML page with plots (DIR/index.html + PNGs), drawn by the matplotlib
// script reports/lpu_report.py (docs/reports.md). Inputs: a sweep directory, compare JSON,
// run JSON and trace files, in any mix.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/jobs.h"

namespace lpu {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string json;   // summary of the report (plots written, notes) as JSON
  std::string cost;   // Pareto cost column ("" : the script's default proxy)
};

// Runs the script; returns its exit code (0 ok, 2 bad input). Throws InputError when no
// Python with matplotlib or no script can be found.
int report_command(const ReportOptions& opts);

// A run's trace with `otherData` naming workload, policy and arch, so a report can pair
// a trace with its run.
nlohmann::json trace_json_for(const RunOutcome& run);

// `compare --report DIR`: writes DIR/compare.json and DIR/traces/POLICY.json (the runs must
// have been simulated with trace recording), then the report from them.
int write_compare_report(const nlohmann::json& compare, const std::vector<RunOutcome>& runs, const std::string& dir);

// Where the report script and a usable interpreter are (exposed for `--help` texts/tests).
std::string find_report_script();
std::string find_python();

}  // namespace lpu
