// lpu-large-graph: writes a built-in workload's graph as a graph file whose sidecar holds no
// data, for measuring what a timing run of a large model costs when it comes as a file.
//   build/lpu-large-graph OUT_DIR [WORKLOAD]        (default llama2-7b-decode: fp16, 6.7e9 weights)
// Writes OUT_DIR/<WORKLOAD>.json, indexing every parameter, input and expected output in
// OUT_DIR/<WORKLOAD>.bin, which is created at its full size (13.5 GB for LLaMA-2-7B) as a
// sparse file: no byte is written, so it costs no disk. A timing run (`lpu run FILE`) reads
// only the JSON; a functional run would read zeros. Prints the sizes.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/graph_file.h"
#include "jobs/jobs.h"
#include "support/error.h"
#include "support/units.h"

using namespace lpu;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: lpu-large-graph OUT_DIR [WORKLOAD]\n";
    return 2;
  }
  try {
    std::string name = argc > 2 ? argv[2] : "llama2-7b-decode";
    WorkloadSpec w = resolve_workload(name);
    GraphFile f;
    f.graph = build_graph(w);
    f.meta = {{"producer", "lpu-large-graph"}, {"workload", w.name}, {"sidecar", "sparse, no data (timing only)"}};
    fs::create_directories(argv[1]);
    std::string stem = fs::path(w.name).stem().string();
    std::string bin = stem + ".bin";
    int64_t offset = 0, weights = 0;
    auto index = [&](const std::string& n, const std::string& role, const TensorType& t) {
      offset = (offset + 63) / 64 * 64;  // the exporter's alignment
      f.tensors.push_back({n, role, t, bin, offset});
      offset += t.bytes();
    };
    for (NodeId id : f.graph.parameters()) {
      index(f.graph.node(id).name, "parameter", f.graph.node(id).type);
      weights += f.graph.node(id).type.numel();
    }
    for (const Node& n : f.graph.nodes())
      if (n.kind == NodeKind::Placeholder) index(n.name, "input", n.type);
    auto outs = f.graph.outputs();
    for (size_t i = 0; i < outs.size(); ++i) index(strcat("output", i), "expected", f.graph.node(outs[i]).type);
    fs::path dir(argv[1]);
    std::ofstream(dir / (stem + ".json")) << print_graph_json(f);
    { std::ofstream(dir / bin, std::ios::binary); }
    fs::resize_file(dir / bin, static_cast<uintmax_t>(offset));  // sparse: nothing written
    std::cout << (dir / (stem + ".json")).string() << ": " << f.graph.nodes().size() << " nodes, " << weights
              << " weights, sidecar " << format_bytes(offset) << " (sparse)\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
