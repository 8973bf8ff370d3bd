// Graph files: the versioned JSON interchange format and its binary sidecar (docs/graph-format.md).
//   model.json  the graph (nodes, outputs) plus an index of the arrays in the sidecar
//   model.bin   raw little-endian arrays: weights, example inputs, expected outputs
// Loading a graph reads only the JSON; array data is read on demand (read_tensor), so a graph
// with 66B parameters loads for a timing run without touching its weights.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

constexpr int kGraphFormatVersion = 1;

// One array in the sidecar.
struct TensorEntry {
  std::string name;  // the node's name (role parameter/input) or "output<i>" (role expected)
  std::string role;  // "parameter" | "input" | "expected"
  TensorType type;
  std::string file;  // relative to the JSON file's directory (or absolute)
  int64_t offset = 0;  // in bytes
  bool operator==(const TensorEntry&) const = default;
};

struct GraphFile {
  Graph graph;
  std::vector<TensorEntry> tensors;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();  // producer info, kept verbatim
  std::string dir;  // where relative sidecar paths start ("" = the working directory)

  const TensorEntry* find(const std::string& role, const std::string& name) const;
};

// Canonical JSON text: one node / tensor entry per line, fixed key order.
std::string print_graph_json(const GraphFile& f);
// Parses and verifies (known ops, types, no dangling inputs or cycles); nodes may be listed in
// any order that has no cycle. Errors are one-line InputErrors "SOURCE: ... %node ...".
GraphFile parse_graph_json(const std::string& text, const std::string& source = "<json>");

// Loads a graph file by path: JSON (with its sidecar index), or the text form of
// print_graph() (no sidecar). Reads no array data.
GraphFile load_graph_file(const std::string& path);
bool is_graph_file_path(const std::string& path);  // ends in .json, or .txt (the text form)

// Reads one array from the sidecar (checks the file is long enough); values become floats.
Tensor read_tensor(const GraphFile& f, const TensorEntry& e);
// Data for every placeholder and parameter of `g` (the loaded graph or one derived from it,
// e.g. after constant folding removed some parameters). Missing entries are InputErrors.
TensorMap load_graph_inputs(const GraphFile& f, const Graph& g);
// PyTorch's outputs recorded by the exporter, in graph output order.
std::vector<Tensor> load_expected_outputs(const GraphFile& f);

// Writes `json_path` and its sidecar (same stem, .bin): every parameter and placeholder of `g`
// from `data`, and `expected` as the expected outputs (may be empty). Returns the file as loaded.
GraphFile save_graph_file(const std::string& json_path, const Graph& g, const TensorMap& data,
                          const std::vector<Tensor>& expected,
                          const nlohmann::ordered_json& meta = nlohmann::ordered_json::object());

}  // namespace lpu
