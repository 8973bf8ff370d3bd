// Programs of several graphs: the manifest `lpu_frontend.ManifestRecorder` writes for a
// torch.compile run that Dynamo cut at graph breaks (docs/graph-format.md, "Manifests").
// `lpu run MANIFEST` compiles and simulates the graphs in order as one program; between two
// graphs the host runs the Python that caused the break, priced like a host op of
// `--on-unsupported=break`: host.latency_us + bytes / host.link_gbps + host.op_us, where the
// bytes are the results the host reads from the graph before (the value `.item()` branches on)
// and the tensors it makes for the graph after.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/jobs.h"

namespace lpu {

constexpr int kManifestFormatVersion = 1;

struct ManifestInput {
  std::string name;  // the graph's placeholder
  std::string from;  // "input" | "parameter" | "graph" | "host"
  int graph = -1, output = -1;  // from == "graph"
};

struct ManifestGraph {
  std::string name, file;  // file: as written; path: resolved against the manifest's folder
  std::string path;
  std::vector<ManifestInput> inputs;
  std::vector<std::string> output_to;  // per graph output: "graph" | "output" | "host"
};

struct Manifest {
  std::string path, name;
  std::vector<ManifestGraph> graphs;
};

// A .json file whose top-level "format" is "lpu-manifest" (reads the file).
bool is_manifest_file(const std::string& path);
// Parses and checks a manifest: keys, version, graph files present, every flow's producer an
// earlier graph with the same output type as the consumer's input. Errors are InputErrors
// naming the manifest file and the key.
Manifest load_manifest(const std::string& path);

struct ManifestRun {
  Manifest manifest;
  std::vector<RunOutcome> graphs;
  std::vector<GraphBreakStats> breaks;  // one per pair of consecutive graphs
  double latency_us = 0;                // graphs + breaks
  uint64_t cycles = 0, hbm_read_bytes = 0, hbm_write_bytes = 0;
  int64_t compulsory_hbm_bytes = 0;
  bool functional_ok = true;
  nlohmann::json to_json() const;
};

ManifestRun run_manifest(const Manifest& m, const ArchConfig& arch, const std::string& fusion, bool functional,
                         const BreakOptions& b = {});
// The per-graph table, one line per break with its host cost, and the program's totals.
std::string format_manifest_run(const ManifestRun& r);

}  // namespace lpu
