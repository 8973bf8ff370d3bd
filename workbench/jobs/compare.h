// `lpu compare`: one workload under several fusion policies, side by side: a table with where
// each policy's gain over the first came from, the runs as JSON, optionally an HTML report.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "jobs/jobs.h"

namespace lpu {

struct CompareRequest {
  WorkloadSpec workload;
  ArchConfig arch;
  std::vector<std::string> arch_overrides;  // the --set keys, as shown and written
  std::string policies;                     // comma-separated
  bool functional = false;
  BreakOptions breaks;
  std::string json;                  // write all runs here ("" : not)
  std::string report;                // write an HTML report into this directory ("" : not)
  std::ostream* progress = nullptr;  // "[i/n] workload policy..." while running (a terminal)
};

// The policies of a comma-separated list, each checked against the registry, none twice.
std::vector<std::string> compare_policy_names(const std::string& policies);
// The runs of a comparison, without printing or writing anything: the runs, the JSON that
// `--json` writes, the table, and whether every functional check passed.
struct CompareResult {
  std::vector<RunOutcome> runs;
  nlohmann::json json;
  std::string table;
  bool all_ok = true;
};
CompareResult run_compare(const CompareRequest& r);
// Prints the table (and what it wrote) to `out`; the report script's exit status when it
// fails, else 0. Throws CheckFailed when a functional check failed.
int compare_command(const CompareRequest& r, std::ostream& out);

}  // namespace lpu
