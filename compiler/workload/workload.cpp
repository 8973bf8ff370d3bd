#include "workload/workload.h"

#include <cmath>
#include <filesystem>

#include "io/graph_file.h"
#include "support/error.h"
#include "support/yaml_util.h"
#include "workload/transformer.h"

#ifndef LPU_SOURCE_DIR
#define LPU_SOURCE_DIR "."
#endif

namespace lpu {

int64_t WorkloadSpec::param(const std::string& key) const {
  auto it = params.find(key);
  if (it == params.end()) throw InternalError("workload " + name + ": parameter " + key + " not resolved");
  return it->second;
}

namespace {

TensorType tt(const WorkloadSpec& w, Shape s) { return {w.dtype, std::move(s)}; }

// [tokens, d_model] -> layer_norm -> gelu -> + residual: the first end-to-end microbenchmark.
Graph build_ln_gelu_add(const WorkloadSpec& w) {
  Graph g(w.name);
  int64_t d = w.param("d_model");
  NodeId x = g.add_placeholder("x", tt(w, {w.tokens(), d}));
  NodeId gamma = g.add_parameter("ln_weight", tt(w, {d}));
  NodeId beta = g.add_parameter("ln_bias", tt(w, {d}));
  NodeId ln = g.add_call("layer_norm", {x, gamma, beta}, {{"eps", 1e-5}}, "ln");
  NodeId act = g.add_call("gelu", {ln}, {{"approximate", std::string("none")}}, "gelu");
  NodeId out = g.add_call("add", {act, x}, {}, "residual");
  g.set_output({out});
  return g;
}

Graph build_softmax(const WorkloadSpec& w) {
  Graph g(w.name);
  NodeId x = g.add_placeholder("scores", tt(w, {w.tokens(), w.param("cols")}));
  g.set_output({g.add_call("softmax", {x}, {{"dim", int64_t{-1}}}, "probs")});
  return g;
}

Graph build_rms_norm(const WorkloadSpec& w) {
  Graph g(w.name);
  int64_t d = w.param("d_model");
  NodeId x = g.add_placeholder("x", tt(w, {w.tokens(), d}));
  NodeId wt = g.add_parameter("norm_weight", tt(w, {d}));
  g.set_output({g.add_call("rms_norm", {x, wt}, {{"eps", 1e-6}}, "rms")});
  return g;
}

// [tokens, k] x W^T, W [n, k]: the matrix engine's basic operation (GEMV when tokens = 1).
Graph build_gemv(const WorkloadSpec& w) {
  Graph g(w.name);
  NodeId x = g.add_placeholder("x", tt(w, {w.tokens(), w.param("k")}));
  NodeId wt = g.add_parameter("weight", tt(w, {w.param("n"), w.param("k")}));
  NodeId wT = g.add_call("permute", {wt}, {{"dims", std::vector<int64_t>{1, 0}}}, "weight_T");
  g.set_output({g.add_call("matmul", {x, wT}, {}, "y")});
  return g;
}

// One decode-step attention over a KV cache: q [heads, 1, hd] against `context` cached keys.
Graph build_attention_decode(const WorkloadSpec& w) {
  Graph g(w.name);
  int64_t H = w.param("heads"), hd = w.param("head_dim"), C = std::max<int64_t>(w.context, 1);
  NodeId q = g.add_placeholder("q", tt(w, {H, 1, hd}));
  NodeId k = g.add_placeholder("k_cache", tt(w, {H, C, hd}));
  NodeId v = g.add_placeholder("v_cache", tt(w, {H, C, hd}));
  NodeId kT = g.add_call("permute", {k}, {{"dims", std::vector<int64_t>{0, 2, 1}}}, "k_T");
  NodeId s = g.add_call("matmul", {q, kT}, {}, "scores");
  NodeId c = g.add_call("full", {}, {{"value", 1.0 / std::sqrt(static_cast<double>(hd))}, {"dtype", std::string(dtype_name(w.dtype))}}, "scale");
  NodeId p = g.add_call("softmax", {g.add_call("mul", {s, c}, {}, "scaled")}, {{"dim", int64_t{-1}}}, "probs");
  g.set_output({g.add_call("matmul", {p, v}, {}, "attn")});
  return g;
}

}  // namespace

const std::vector<ModelBuilder>& model_builders() {
  static const std::vector<ModelBuilder> b = [] {
    std::vector<ModelBuilder> v = {
      {"ln_gelu_add", "[tokens, d_model] -> layer_norm -> gelu -> residual add", {{"d_model", 1024}}, build_ln_gelu_add},
      {"softmax", "softmax over the rows of [tokens, cols]", {{"cols", 1024}}, build_softmax},
      {"rms_norm", "RMSNorm over [tokens, d_model]", {{"d_model", 4096}}, build_rms_norm},
      {"gemv", "[tokens, k] x W^T with W [n, k] on the matrix engine", {{"k", 4096}, {"n", 4096}}, build_gemv},
      {"attention_decode", "one decode step of attention over a KV cache of `context` tokens",
       {{"heads", 32}, {"head_dim", 128}}, build_attention_decode},
    };
    for (const auto& m : transformer_shapes()) {
      std::string what = strcat(m.layers, " layers, d_model ", m.d_model, ", ", m.heads, " heads",
                                m.kv_heads != m.heads ? strcat(" (", m.kv_heads, " kv)") : "", ", ffn ", m.ffn,
                                ", max_position ", m.max_position);
      const TransformerShape* shape = &m;
      v.push_back({m.name, what, {}, [shape](const WorkloadSpec& w) { return build_transformer(*shape, w); }});
    }
    return v;
  }();
  return b;
}

const ModelBuilder* find_model_builder(const std::string& name) {
  for (const auto& b : model_builders())
    if (b.name == name) return &b;
  return nullptr;
}

namespace {

// A path too long for the filesystem (ENAMETOOLONG) names no file: not an exception.
bool is_file(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

// A workload's name names its graph, its results and the files written for it (sweep rows,
// reports): so it follows the graph's name rules and stays short.
std::string read_workload_name(const YamlReader& r, const YAML::Node& root, const std::string& fallback) {
  std::string name = r.get_string(root, "name", "", fallback);
  if (root["name"] && !is_valid_name(name))
    r.fail(root["name"], "name", strcat("'", name_for_message(name), "' must be [A-Za-z0-9_.-]+, at most ",
                                        kMaxNameLength, " characters"));
  return name;
}

}  // namespace

WorkloadSpec load_workload_file(const std::string& path) {
  YamlDoc doc = load_yaml_file(path);
  YamlReader r(doc);
  const YAML::Node& root = doc.root;
  r.require_map(root, "");
  WorkloadSpec w;
  w.file = path;
  w.name = std::filesystem::path(path).stem().string();
  if (root["graph"]) {
    // A graph file carries its own shapes, dtypes and data: only a name may be added.
    r.check_keys(root, "", {"name", "graph"});
    std::filesystem::path gp(r.get_string(root, "graph", ""));
    if (gp.is_relative()) gp = std::filesystem::path(path).parent_path() / gp;
    w.graph = gp.string();
    if (!is_file(gp.string())) r.fail(root["graph"], "graph", "no such file " + name_for_message(w.graph));
    w.name = read_workload_name(r, root, w.name);
    return w;
  }
  w.model = r.get_string(root, "model", "");
  const ModelBuilder* mb = find_model_builder(w.model);
  if (!mb) {
    std::string all;
    for (const auto& b : model_builders()) all += (all.empty() ? "" : ", ") + b.name;
    r.fail(root["model"], "model", strcat("unknown model '", w.model, "'; built-in models: ", all, " (or `graph: PATH` for a graph file)"));
  }
  std::vector<std::string> allowed = {"name", "model", "phase", "batch", "seq_len", "context", "layers", "dtype", "seed"};
  if (find_transformer(w.model)) allowed.insert(allowed.end(), {"prompt_len", "gen_len"});
  for (const auto& [k, v] : mb->params) allowed.push_back(k);
  r.check_keys(root, "", allowed);
  w.name = read_workload_name(r, root, w.name);
  w.phase = r.get_string(root, "phase", "", "decode");
  if (w.phase != "decode" && w.phase != "prefill") r.fail(root["phase"], "phase", "expected decode or prefill, got '" + w.phase + "'");
  w.batch = r.get_int(root, "batch", "", 1);
  r.check_range(root, "batch", "", static_cast<double>(w.batch), 1, 1 << 20);
  w.seq_len = r.get_int(root, "seq_len", "", 1);
  r.check_range(root, "seq_len", "", static_cast<double>(w.seq_len), 1, 1 << 24);
  w.context = r.get_int(root, "context", "", 0);
  r.check_range(root, "context", "", static_cast<double>(w.context), 0, 1 << 24);
  w.layers = r.get_int(root, "layers", "", -1);
  if (root["layers"]) r.check_range(root, "layers", "", static_cast<double>(w.layers), 1, 1000);
  w.seed = static_cast<uint64_t>(r.get_int(root, "seed", "", 1));
  // Generation lengths: the range here, the model's max_position in `lpu generate`.
  for (auto [key, dst] : {std::pair{"prompt_len", &w.prompt_len}, std::pair{"gen_len", &w.gen_len}}) {
    if (!root[key]) continue;
    *dst = r.get_int(root, key, "");
    r.check_range(root, key, "", static_cast<double>(*dst), 1, 1 << 24);
  }
  std::string dt = r.get_string(root, "dtype", "", "f32");
  if (!parse_dtype(dt, w.dtype) || !is_floating(w.dtype)) r.fail(root["dtype"], "dtype", "expected f32, f16 or bf16, got '" + dt + "'");
  for (const auto& [k, dflt] : mb->params) {
    w.params[k] = r.get_int(root, k, "", dflt);
    r.check_range(root, k, "", static_cast<double>(w.params[k]), 1, 1 << 24);
  }
  return w;
}

std::string workloads_dir() {
  if (std::filesystem::is_directory("workloads")) return "workloads";
  return std::string(LPU_SOURCE_DIR) + "/workloads";
}

WorkloadSpec resolve_workload(const std::string& name_or_path) {
  if (is_graph_file_path(name_or_path)) {
    if (!is_file(name_or_path))
      throw InputError(strcat("graph file '", name_for_message(name_or_path), "': no such file"));
    WorkloadSpec w;
    w.name = std::filesystem::path(name_or_path).stem().string();
    w.file = name_or_path;
    w.graph = name_or_path;
    return w;
  }
  if (is_file(name_or_path)) return load_workload_file(name_or_path);
  std::string cand = workloads_dir() + "/" + name_or_path + ".yaml";
  if (is_file(cand)) return load_workload_file(cand);
  if (const ModelBuilder* mb = find_model_builder(name_or_path)) {
    // A built-in model by name (`lpu list workloads` lists them): its builder's defaults; an
    // LLM runs one decode step at batch 1 against 2048 cached tokens in fp16, as the
    // workloads/*-decode.yaml files do.
    WorkloadSpec w;
    w.name = w.model = name_or_path;
    for (const auto& [k, dflt] : mb->params) w.params[k] = dflt;
    if (find_transformer(name_or_path)) {
      w.context = 2048;
      w.dtype = DType::f16;
    }
    return w;
  }
  throw InputError(strcat("workload '", name_for_message(name_or_path), "': no such file, and no ", name_for_message(cand), " (see `lpu list workloads`)"));
}

Graph build_graph(const WorkloadSpec& w) {
  if (!w.graph.empty()) return load_graph_file(w.graph).graph;
  const ModelBuilder* mb = find_model_builder(w.model);
  if (!mb) throw InputError(strcat("workload ", w.name, ": unknown model '", w.model, "'"));
  WorkloadSpec full = w;
  for (const auto& [k, dflt] : mb->params)
    if (!full.params.count(k)) full.params[k] = dflt;
  return mb->build(full);
}

}  // namespace lpu
