// `lpu sweep`: runs every point of a sweep file, N child processes at a time (SystemC allows
// one simulation per process), appending each finished point to DIR/results.{jsonl,csv}.
// Each child is `lpu run WORKLOAD --arch BASE --set k=v... --fusion P --json TMP`, or `lpu serve`
// with the point's serving flags in a serving sweep (`command: serve`, sweep/sweep_serve.h).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep_layout.h"
#include "sweep/sweep_spec.h"

namespace lpu {

struct SweepOptions {
  std::string out_dir;
  int jobs = 1;
  bool resume = false;      // skip points already in DIR; without it DIR must hold no results
  double timeout_s = 0;     // per point wall-clock limit (0: none); a point over it fails
  std::string exe;          // the lpu binary the children run ("" : this one)
  bool progress_bar = false;  // redraw one line (a terminal); else plain periodic lines
  Shard shard;              // run only this shard's points, into DIR/results-I-of-N.* (sweep_layout.h)
};

// A serving point's goodput: requests/s that met both SLOs (`lpu serve` summary.slo.goodput_rps).
inline constexpr const char* kGoodputColumn = "summary.slo.goodput_rps";

struct SweepSummary {
  std::string name, dir;
  std::string stem = "results";  // the result files: DIR/STEM.csv, DIR/STEM.jsonl
  std::string shard;        // "I/N" or ""
  size_t points = 0;        // points of the sweep file (of the shard, with --shard)
  size_t skipped = 0;       // already in DIR (--resume)
  size_t ran = 0;           // run now
  size_t ok = 0, failed = 0;  // over all points of the sweep, including skipped ones
  double wall_s = 0;
  std::vector<std::pair<std::string, std::string>> failures;  // point id, message
  // The best ok row per workload and policy by `metric`: the lowest latency_us (run sweeps:
  // "fastest" in to_json), or the highest goodput (serving sweeps: "highest_goodput").
  std::string metric = "latency_us";
  std::vector<nlohmann::ordered_json> best;
  nlohmann::json to_json() const;
};

// Runs the sweep; progress goes to `out`. Throws InputError for unusable DIRs.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& opts, std::ostream& out);

// The subcommand: load, run, print a summary, write `json` if given. Exit code 0 when
// every point succeeded, 1 when any failed (the sweep still ran all of them).
// --dry-run on the local backend: the number of points (of the shard, with --shard) and the
// first point ids, from the loaded and validated sweep file; runs and writes nothing.
int sweep_dry_run(const std::string& file, const SweepOptions& opts);
int sweep_command(const std::string& file, const SweepOptions& opts, const std::string& json);

}  // namespace lpu
