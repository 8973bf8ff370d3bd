// Coverage of PyTorch's core ATen opset (compiler/graph/data/core_aten_ops-torch-2.11.txt):
// how the workbench handles each op. `lpu list ops --aten` prints it; test_core_ops fails on
// any op that is missing.
#pragma once
#include <string>
#include <vector>

namespace lpu {

struct CoreAtenOp {
  std::string name;                    // e.g. "add"; the graph op is "aten.add"
  std::vector<std::string> overloads;  // e.g. {"Scalar", "Tensor"}
  // lowered     aten.NAME becomes the core op NAME, which the LPU back end lowers
  // decomposed  aten.NAME becomes other core ops (passes/aten_decompositions.cpp)
  // host        a priced graph break on the host (ref/host_ops.cpp); "host (timing only)"
  //             when it has no host semantics for functional runs yet
  // missing     none of these: an error naming the node
  std::string handling;
};

struct CoreAtenSet {
  std::string torch_version;
  std::vector<CoreAtenOp> ops;  // sorted by name
};

// Reads the committed list (path: the default data file when empty). InputError on a bad file.
CoreAtenSet core_aten_coverage(const std::string& path = "");

}  // namespace lpu
