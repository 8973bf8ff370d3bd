#include "jobs/triton_data.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "io/graph_file.h"
#include "jobs/cli_support.h"
#include "ref/reference.h"
#include "support/error.h"

namespace lpu {

// --emit triton-data: what scripts/triton_check.py needs to check an emitted Triton module without
// lpu: the inputs (stored as fp32, or, for a built-in workload's large random inputs, the seed of
// ref/tensor.cpp's LCG, which the script reproduces) and the reference outputs (the reference
// executor's, or PyTorch's for a graph file), in triton_data.json + triton_data.bin (fp32 LE).
void write_triton_data(const WorkloadSpec& w, const Compilation& c, const std::string& outdir) {
  std::optional<GraphFile> file;
  if (!w.graph.empty()) file = load_graph_file(w.graph);
  TensorMap inputs = file ? load_graph_inputs(*file, c.core) : make_random_inputs(c.core, w.seed);
  std::vector<Tensor> expected = file ? load_expected_outputs(*file) : run_reference(c.core, inputs);
  std::string bin;
  auto put = [&](const Tensor& t) {
    nlohmann::json e;
    e["offset"] = bin.size();
    e["numel"] = t.data.size();
    bin.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
    return e;
  };
  int64_t total = 0;
  for (const auto& [name, t] : inputs) total += t.numel();
  constexpr int64_t kStoreLimit = int64_t{1} << 21;  // elements: beyond, built-in inputs go by seed
  nlohmann::json j, ins = nlohmann::json::object(), outs = nlohmann::json::object();
  j["format"] = "lpu-triton-data/1";
  j["workload"] = w.name;
  j["program"] = c.loop_ir.name;
  j["reference"] = file ? "PyTorch (graph file)" : "reference executor";
  j["bin"] = "triton_data.bin";
  for (const auto& n : c.core.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    const Tensor& t = inputs.at(n.name);
    nlohmann::json e = file || total <= kStoreLimit ? put(t) : nlohmann::json::object();
    if (!file) {
      e["lcg_seed"] = w.seed + static_cast<uint64_t>(n.id) * 7919;
      e["lcg_scale"] = random_input_scale(n);  // then rounded to the dtype again (ref/reference.h)
    }
    e["shape"] = t.type.shape;
    e["dtype"] = dtype_name(t.type.dtype);
    ins[n.name] = e;
  }
  if (expected.size() != c.loop_ir.outputs.size())
    throw InternalError("triton-data: output count differs from the program's");
  for (size_t i = 0; i < expected.size(); ++i) {
    nlohmann::json e = put(expected[i]);
    e["shape"] = expected[i].type.shape;
    e["dtype"] = dtype_name(expected[i].type.dtype);
    outs[c.loop_ir.outputs[i]] = e;
  }
  j["inputs"] = ins;
  j["outputs"] = outs;
  write_file(outdir + "/triton_data.bin", bin);
  write_file(outdir + "/triton_data.json", j.dump(1) + "\n");
}

}  // namespace lpu
