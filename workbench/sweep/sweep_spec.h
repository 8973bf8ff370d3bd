// Sweep files: the points of a design-space exploration (docs/sweeps.md).
//   name: hbm_vs_lmu
//   base: lpu-small                 # arch config the axes modify (path or name in configs/)
//   set: {hbm.latency_ns: 80}       # fixed overrides for every point
//   workloads: [ln_gelu_add, softmax]
//   fusion: [none, greedy]
//   combine: product                # or zip: the i-th values of every axis together
//   axes:
//     hbm.bandwidth_gbps: [128, 256, 512]
//     lmu.capacity_kib: {start: 64, stop: 256, factor: 4}
// `command: serve` makes every point an `lpu serve` run of an LLM, with `serve.KEY` axes and
// `set:` keys for its flags (sweep/sweep_serve.h).
// Every axis value is validated against the base config when the file is loaded, so a typo
// fails before any simulation starts, with the sweep file's line and key.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/scalar_json.h"  // scalar_to_json, for the rows
#include "sweep/sweep_layout.h"

namespace lpu {

struct SweepAxis {
  std::string key;                  // dotted config key, as for --set
  std::vector<std::string> values;  // YAML scalars as passed to --set (ranges: canonical text)
  int line = 0;
};

struct SweepWorkload {
  std::string name;   // the workload's name (file stem or `name:`): the row's `workload`
  std::string file;   // absolute path handed to `lpu run`
};

struct SweepSpec {
  std::string name, file, description;
  std::string base_dir = ".";            // where relative paths in the file were looked up first
  std::string command = "run";           // what a point runs: `lpu run` or `lpu serve`
  std::string base;                      // absolute path of the base arch config
  std::vector<std::string> base_sets;    // "key=value" from `set:`, applied before the axes
  std::vector<SweepWorkload> workloads;
  std::vector<std::string> policies;
  bool zip = false;                      // combine: zip (else product)
  std::vector<SweepAxis> axes;
  std::string traces = "reference";      // reference | all | none: which points record a trace
  bool serving() const { return command == "serve"; }
};

struct SweepPoint {
  std::string id;                   // stable identity: workload|policy|key=value|...
  size_t workload = 0;              // index into SweepSpec::workloads
  std::string policy;
  size_t arch_point = 0;            // index of the axis combination; 0 is the reference point
  std::vector<std::string> values;  // one per axis
};

SweepSpec load_sweep_file(const std::string& path);
// `base_dir`: where relative paths in the file are looked up first.
SweepSpec load_sweep_string(const std::string& yaml, const std::string& name, const std::string& base_dir = ".");

// Axis value combinations (product or zip), the first is the reference point.
std::vector<std::vector<std::string>> arch_points(const SweepSpec& s);
// Every point: arch points outermost, then workloads, then policies, so the reference
// points (the ones reports draw per-kernel plots for) finish first.
std::vector<SweepPoint> expand_points(const SweepSpec& s);

// The indices (in expansion order, ascending) of the points shard `shard` runs; every point
// when it is not active. Points are ranked by a hash of their id and rank r goes to shard
// r mod N: shards differ by at most one point, and no axis lines up with the split (I modulo N
// over the expansion order gave shard 0 of 2 every `none` point and shard 1 every `greedy`
// one, 45 s apart on a 100 s sweep). The assignment depends on the point ids alone.
std::vector<size_t> shard_point_indices(const std::vector<SweepPoint>& all, const Shard& shard);
// `--set` assignments for one point: the fixed `set:` ones, then the axis values.
std::vector<std::string> point_sets(const SweepSpec& s, const SweepPoint& p);

// What reports need to know about the sweep (axes, reference point, workloads, ...).
nlohmann::json sweep_manifest(const SweepSpec& s);

// 16 hex digits identifying the resolved sweep: the base config after `set:` (its content,
// not its path), the workloads' names and file contents, policies, axes and their values,
// combine and traces (not the sweep's name or description). The same sweep checked out at another path (a cluster node) has the
// same hash; any change to what the points compute gives another. Every result row carries
// it, so shards of different sweeps are never merged.
std::string sweep_hash(const SweepSpec& s);

}  // namespace lpu
