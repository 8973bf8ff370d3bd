// The C++ half of the PyTorch frontend check. ctest first runs tests/frontend/export_models.py
// (fixture frontend_export), which exports the model zoo with PyTorch; this binary then checks
// every exported graph, one test each:
//   - the JSON is canonical: C++ re-prints the Python-written file byte for byte, and the text
//     forms of the captured and the normalised graph round-trip;
//   - normalisation leaves only core ops, and constant subgraphs left no factory ops behind;
//   - the reference executor, on the sidecar's inputs and weights, reproduces PyTorch's outputs
//     within |ref - torch| <= 1e-4 * max(1, |torch|) (fp32).
// Usage: test_frontend_models EXPORT_DIR [gtest flags]
#include <gtest/gtest.h>

#include "zoo_main.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "graph/ops.h"
#include "jobs/jobs.h"

using namespace lpu;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExportedModel : public testing::Test {
 public:
  explicit ExportedModel(fs::path json) : json_(std::move(json)) {}

  void TestBody() override {
    std::string text = read(json_);
    GraphFile f = parse_graph_json(text, json_.string());
    EXPECT_EQ(print_graph_json(f), text) << "the Python writer and the C++ printer disagree on the canonical form";
    std::string captured = print_graph(f.graph);
    EXPECT_EQ(print_graph(parse_graph(captured)), captured);

    ReferenceRun r = run_reference_check(json_.string());
    std::string core = print_graph(r.core);
    EXPECT_EQ(print_graph(parse_graph(core)), core);
    for (const Node& n : r.core.nodes()) {
      if (n.kind != NodeKind::Call) continue;
      EXPECT_TRUE(find_op(n.op)->core()) << "%" << n.name << " (" << n.op << ") survived normalisation";
    }
    for (const Node& n : f.graph.nodes())
      for (const char* op : {"aten.ones", "aten.arange", "aten.triu", "aten.tril", "aten.sin", "aten.cos"})
        EXPECT_NE(n.op, op) << "constant subgraph op %" << n.name << " was not folded by the exporter";

    std::cout << "  " << json_.stem().string() << ": " << f.graph.size() << " nodes -> " << r.core.size()
              << " core nodes, max abs error vs PyTorch " << r.check.max_abs_error << "\n";
    EXPECT_TRUE(r.check.ok) << r.check.worst;
    EXPECT_EQ(r.check.max_abs_per_output.size(), f.graph.outputs().size());
  }

 private:
  fs::path json_;
};

}  // namespace

int main(int argc, char** argv) {
  return run_per_exported_graph(argc, argv, "FrontendModels", [](fs::path p) -> testing::Test* { return new ExportedModel(p); });
}
