// Workloads: a YAML file naming a built-in model builder and its shapes,
//   model: ln_gelu_add      # built-in builder (see `lpu list workloads`)
//   phase: decode|prefill   batch: 1   seq_len: 128   context: 0   layers: (all)   dtype: f32
//   d_model: 1024           # builder-specific shape keys
// Builders generate the graph directly in C++ (no Python needed).
// A decoder-only LLM is a preset (`model: llama2-7b`, keys may override its shape) or a new
// model (`model: decoder` and its keys): d_model, heads, kv_heads, head_dim, ffn, layers,
// vocab, norm, mlp, positions, bias, tied_embeddings, max_position, experts,
// experts_per_token (transformer.h; docs/workloads.md).
// Or a YAML file naming a graph file (docs/graph-format.md), e.g. exported from PyTorch:
//   graph: exported/gpt_block.json   # relative to the YAML file's directory
//   name: gpt_block                  # optional (default: the YAML file's stem)
// A graph file (.json, or the text form .txt) can also be given directly instead of a YAML.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "workload/transformer.h"

namespace lpu {

struct WorkloadSpec {
  std::string name;  // file stem or given name
  std::string file;  // YAML it came from ("" for built-in defaults)
  std::string model;
  std::string graph;  // path of a graph file, instead of a built-in `model`
  std::string phase = "decode";
  int64_t batch = 1;
  int64_t seq_len = 1;
  int64_t context = 0;
  int64_t layers = -1;  // -1: the model's own layer count
  DType dtype = DType::f32;
  // Keys weight_dtype and group_size (built-in decoders; docs/quantisation.md): the linear
  // weights stored packed, in groups along their input width. Off: in `dtype`.
  Quant weight_quant;
  uint64_t seed = 1;  // input data for functional runs
  // `lpu generate` (built-in LLMs only; docs/generate.md): prompt tokens and tokens to
  // generate. 0: not given (the command's defaults or flags apply). Other commands ignore them.
  int64_t prompt_len = 0;
  int64_t gen_len = 0;
  // Tensor parallelism (docs/tensor-parallel.md): the graph of rank tp_rank of tp devices
  // (set by workload/tensor_parallel.h from the config's `devices`, never read from YAML).
  int64_t tp = 1, tp_rank = 0;
  // How a mixture of experts splits over the devices (keys moe_parallel and expert_capacity;
  // docs/tensor-parallel.md, "Expert parallelism"): Tensor splits every expert's FFN columns as
  // the dense MLP's; Expert gives each device experts/devices whole experts and a static
  // capacity of ceil(expert_capacity x tokens x experts_per_token / devices) routed rows.
  enum class MoeParallel { Tensor, Expert };
  MoeParallel moe_parallel = MoeParallel::Tensor;
  double expert_capacity = 1.25;
  std::map<std::string, int64_t> params;  // builder-specific shape keys
  // A ragged step of a built-in decoder (serving: workbench/serve): the sequences of one
  // forward pass, each `tokens` new tokens on top of `context` cached ones. The projections
  // and the MLP run over all the step's tokens, attention per sequence against its own cache,
  // and the LM head on each sequence's last token. Set in code, never read from YAML; empty:
  // `batch` sequences of `seq_len` tokens at one `context` (the lockstep step).
  struct RaggedSeq {
    int64_t context = 0, tokens = 1;
  };
  std::vector<RaggedSeq> ragged;
  // A decoder-only LLM's shape: the preset named by `model` with the file's keys applied, or
  // the model the keys describe (`model: decoder`). Unset for other workloads, and for specs
  // built in code, where decoder_of() falls back to the preset `model` names.
  std::optional<TransformerShape> decoder;
  int64_t param(const std::string& key) const;
  int64_t tokens() const;  // batch * seq_len, or the ragged step's tokens
};

struct ModelBuilder {
  std::string name;
  std::string description;
  std::vector<std::pair<std::string, int64_t>> params;  // accepted shape keys and defaults
  std::function<Graph(const WorkloadSpec&)> build;
};

const std::vector<ModelBuilder>& model_builders();
const ModelBuilder* find_model_builder(const std::string& name);

// The decoder a workload runs (its `decoder`, else the preset `model` names), or nullptr
// when it is no built-in LLM (a microbenchmark, a graph file).
const TransformerShape* decoder_of(const WorkloadSpec& w);
// The `model` value that describes a new decoder by its keys.
inline constexpr const char* kDecoderModel = "decoder";
// Most sequences a decoder step takes at once (`batch`).
inline constexpr int64_t kMaxDecoderBatch = 256;

// Loads and validates a workload YAML file (unknown keys and bad values are InputErrors
// naming file, line and key).
WorkloadSpec load_workload_file(const std::string& path);
// A workload given as YAML text rather than a file (the Python module's dicts, as JSON, which
// is YAML): the same keys and checks as a file, `overrides` as in resolve_workload below.
// `source` names it in messages ("SOURCE:LINE: key: ..."); graph paths are relative to the
// working directory. Its name is its `name` key, else its `model` (or the graph's stem).
WorkloadSpec load_workload_string(const std::string& yaml, const std::string& source,
                                  const std::vector<std::string>& overrides = {});
// Accepts a path to a YAML file or a graph file, or the name of a file in workloads/.
WorkloadSpec resolve_workload(const std::string& name_or_path);
// The same with "key=value" assignments applied to the workload's YAML before it is read
// (`--set workload.KEY=VALUE`, sweep axes `workload.KEY`), each checked like the file's own
// keys; a built-in model named without a file is its defaults' YAML. A graph file takes none.
WorkloadSpec resolve_workload(const std::string& name_or_path, const std::vector<std::string>& overrides);
// The prefix that marks an override as the workload's rather than the architecture's.
inline constexpr const char* kWorkloadKeyPrefix = "workload.";
std::string workloads_dir();
// The workload's graph: built by its model builder, or loaded from its graph file (the
// JSON only: sidecar data is read on demand, see io/graph_file.h).
Graph build_graph(const WorkloadSpec& w);

}  // namespace lpu
