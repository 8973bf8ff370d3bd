#include "workload/workload.h"

#include <cmath>
#include <filesystem>

#include "io/graph_file.h"
#include "support/error.h"
#include "support/input_file.h"
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

int64_t WorkloadSpec::tokens() const {
  if (ragged.empty()) return batch * seq_len;
  int64_t n = 0;
  for (const RaggedSeq& r : ragged) n += r.tokens;
  return n;
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
  NodeId c = g.add_call(
      "full", {}, {{"value", 1.0 / std::sqrt(static_cast<double>(hd))}, {"dtype", std::string(dtype_name(w.dtype))}},
      "scale");
  NodeId p = g.add_call("softmax", {g.add_call("mul", {s, c}, {}, "scaled")}, {{"dim", int64_t{-1}}}, "probs");
  g.set_output({g.add_call("matmul", {p, v}, {}, "attn")});
  return g;
}

}  // namespace

const std::vector<ModelBuilder>& model_builders() {
  static const std::vector<ModelBuilder> b = [] {
    std::vector<ModelBuilder> v = {
        {"ln_gelu_add",
         "[tokens, d_model] -> layer_norm -> gelu -> residual add",
         {{"d_model", 1024}},
         build_ln_gelu_add},
        {"softmax", "softmax over the rows of [tokens, cols]", {{"cols", 1024}}, build_softmax},
        {"rms_norm", "RMSNorm over [tokens, d_model]", {{"d_model", 4096}}, build_rms_norm},
        {"gemv", "[tokens, k] x W^T with W [n, k] on the matrix engine", {{"k", 4096}, {"n", 4096}}, build_gemv},
        {"attention_decode",
         "one decode step of attention over a KV cache of `context` tokens",
         {{"heads", 32}, {"head_dim", 128}},
         build_attention_decode},
    };
    // The decoder presets: their keys (a workload file may override any of them).
    for (const auto& m : transformer_shapes()) {
      double n = static_cast<double>(m.parameters());
      std::string count = n >= 1e9   ? strcat(std::round(n / 1e7) / 100, "B")
                          : n >= 1e6 ? strcat(std::round(n / 1e5) / 10, "M")
                                     : strcat(m.parameters());
      std::string what = strcat("decoder, ", count, " parameters: ", describe_decoder(m));
      const TransformerShape* shape = &m;
      v.push_back({m.name, what, {}, [shape](const WorkloadSpec& w) {
                     return build_transformer(w.decoder ? *w.decoder : *shape, w);
                   }});
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
    r.fail(root["name"], "name",
           strcat("'", name_for_message(name), "' must be [A-Za-z0-9_.-]+, at most ", kMaxNameLength, " characters"));
  return name;
}

// The decoder keys (transformer.h), in the order `lpu list workloads` prints them.
const std::vector<std::string>& decoder_key_names() {
  static const std::vector<std::string> k = {
      "layers", "d_model",         "heads",        "kv_heads", "head_dim",
      "ffn",    "vocab",           "norm",         "mlp",      "positions",
      "bias",   "tied_embeddings", "max_position", "experts",  "experts_per_token",
      "moe_ffn", "shared_experts", "router", "expert_groups", "group_topk", "first_dense_layers",
      "attention", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "mla_form"};
  return k;
}

// The values of the mixture-of-experts and latent-attention keys (checked against each other
// by check_moe_keys and check_mla_keys).
void read_mixture_and_latent_keys(const YamlReader& r, const YAML::Node& root, TransformerShape& m) {
  auto count = [&](const char* key, int64_t& dst, int64_t lo, int64_t hi) {
    if (!root[key]) return;
    dst = r.get_int(root, key, "");
    r.check_range(root, key, "", static_cast<double>(dst), static_cast<double>(lo), static_cast<double>(hi));
  };
  auto word = [&](const char* key, auto& dst,
                  bool (*parse)(const std::string&, std::remove_reference_t<decltype(dst)>&), const char* choices) {
    if (!root[key]) return;
    std::string v = r.get_string(root, key, "");
    if (!parse(v, dst)) r.fail(root[key], key, strcat("expected ", choices, ", got '", name_for_message(v), "'"));
  };
  count("experts", m.experts, 1, 1 << 12);
  count("experts_per_token", m.experts_per_token, 1, 1 << 12);
  count("moe_ffn", m.moe_ffn, 1, 1 << 22);
  count("shared_experts", m.shared_experts, 0, 1 << 12);
  word("router", m.router, parse_router, "softmax or sigmoid");
  count("expert_groups", m.expert_groups, 0, 1 << 12);
  count("group_topk", m.group_topk, 0, 1 << 12);
  count("first_dense_layers", m.first_dense_layers, 0, 1000);
  word("attention", m.attention, parse_attention, "mha or mla");
  count("kv_lora_rank", m.kv_lora_rank, 1, 1 << 16);
  count("q_lora_rank", m.q_lora_rank, 0, 1 << 16);
  count("qk_rope_head_dim", m.qk_rope_head_dim, 1, 1 << 16);
  count("qk_nope_head_dim", m.qk_nope_head_dim, 1, 1 << 16);
  count("v_head_dim", m.v_head_dim, 1, 1 << 16);
  word("mla_form", m.mla_form, parse_mla_form, "absorbed, naive or auto");
}

// The mixture-of-experts keys beyond experts / experts_per_token, against each other.
void check_moe_keys(const YamlReader& r, const YAML::Node& root, const TransformerShape& m) {
  for (const char* key : {"moe_ffn", "shared_experts", "router", "expert_groups", "group_topk", "first_dense_layers"})
    if (root[key] && m.experts == 0)
      r.fail(root[key], key, "goes with experts (the keys of a mixture of experts; this model has a dense MLP)");
  if (m.experts == 0) return;
  auto blame = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (root[k]) return k;
    return *keys.begin();
  };
  auto fail = [&](std::initializer_list<const char*> keys, const std::string& why) {
    const char* k = blame(keys);
    r.fail(root[k] ? root[k] : root, k, why);
  };
  if ((m.expert_groups > 0) != (m.group_topk > 0))
    fail({"expert_groups", "group_topk"},
         "expert_groups and group_topk go together (group-limited routing: how many groups, how many a token uses)");
  if (m.expert_groups > 0) {
    if (m.experts % m.expert_groups != 0)
      fail({"expert_groups", "experts"},
           strcat("expert_groups ", m.expert_groups, " must divide experts ", m.experts, " (groups of equal size)"));
    else if (m.group_topk > m.expert_groups)
      fail({"group_topk", "expert_groups"},
           strcat("group_topk ", m.group_topk, " exceeds expert_groups ", m.expert_groups));
    else if (m.group_topk * (m.experts / m.expert_groups) < m.experts_per_token)
      fail({"group_topk", "experts_per_token", "expert_groups"},
           strcat("group_topk ", m.group_topk, " groups of ", m.experts / m.expert_groups,
                  " experts hold fewer than experts_per_token ", m.experts_per_token));
  }
  if (m.first_dense_layers > m.layers)
    fail({"first_dense_layers", "layers"},
         strcat("first_dense_layers ", m.first_dense_layers, " exceeds layers ", m.layers));
}

// The multi-head latent attention keys: only with attention: mla, every width given, rotary
// positions (the decoupled rotary key) with an even rotary width.
void check_mla_keys(const YamlReader& r, const YAML::Node& root, const TransformerShape& m) {
  const char* keys[] = {"kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "mla_form"};
  if (!m.mla()) {
    for (const char* key : keys)
      if (root[key]) r.fail(root[key], key, "goes with attention: mla (multi-head latent attention)");
    return;
  }
  for (const char* key : {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"}) {
    const int64_t v = std::string(key) == "kv_lora_rank"       ? m.kv_lora_rank
                      : std::string(key) == "qk_rope_head_dim" ? m.qk_rope_head_dim
                      : std::string(key) == "qk_nope_head_dim" ? m.qk_nope_head_dim
                                                               : m.v_head_dim;
    if (v < 1) r.fail(root["attention"] ? root["attention"] : root, key, "missing (required with attention: mla)");
  }
  if (m.positions != TransformerShape::Rotary)
    r.fail(root["positions"] ? root["positions"] : root["attention"] ? root["attention"] : root, "positions",
           strcat("attention: mla needs rotary positions (its decoupled rotary key), got ", positions_name(m.positions)));
  if (m.qk_rope_head_dim % 2 != 0)
    r.fail(root["qk_rope_head_dim"] ? root["qk_rope_head_dim"] : root, "qk_rope_head_dim",
           strcat("rotary needs an even width, got ", m.qk_rope_head_dim));
}

// A decoder's shape: `preset` (nullptr for `model: decoder`) with the file's keys applied,
// every key checked, then the keys checked against each other.
TransformerShape read_decoder(const YamlReader& r, const YAML::Node& root, const WorkloadSpec& w,
                              const TransformerShape* preset) {
  TransformerShape m;
  if (preset) {
    m = *preset;
  } else {
    // A new model: its size keys are required; its parts default to LLaMA's.
    for (const char* key : {"layers", "d_model", "heads", "ffn", "vocab"})
      if (!root[key])
        r.fail(root, key,
               "missing (model: decoder describes a new model: layers, d_model, heads, ffn and vocab are required)");
    m.name = w.name;
    m.layers = m.d_model = m.heads = m.kv_heads = m.ffn = m.vocab = 0;
    m.norm = TransformerShape::RmsNorm;
    m.ffn_kind = TransformerShape::SwiGlu;
    m.positions = TransformerShape::Rotary;
    m.bias = false;
    m.max_position = 4096;
  }
  bool any = false;
  for (const auto& k : decoder_key_names()) any = any || root[k];
  if (preset && any) m.name = w.name;  // a preset changed: no longer that model
  auto count = [&](const char* key, int64_t& dst, int64_t lo, int64_t hi) {
    if (!root[key]) return;
    dst = r.get_int(root, key, "");
    r.check_range(root, key, "", static_cast<double>(dst), static_cast<double>(lo), static_cast<double>(hi));
  };
  count("layers", m.layers, 1, 1000);
  count("d_model", m.d_model, 1, 1 << 20);
  count("heads", m.heads, 1, 1 << 12);
  if (preset && root["heads"] && !root["kv_heads"] && m.kv_heads == preset->heads)
    m.kv_heads = m.heads;  // MHA stays MHA
  if (!preset) m.kv_heads = m.heads;
  count("kv_heads", m.kv_heads, 1, 1 << 12);
  if (root["head_dim"])
    count("head_dim", m.head_dim, 1, 1 << 16);
  else if (root["d_model"] || root["heads"])
    m.head_dim = 0;  // derived again from the new d_model / heads
  count("ffn", m.ffn, 1, 1 << 22);
  count("vocab", m.vocab, 1, 1 << 24);
  count("max_position", m.max_position, 1, 1 << 24);
  auto word = [&](const char* key, auto& dst,
                  bool (*parse)(const std::string&, std::remove_reference_t<decltype(dst)>&), const char* choices) {
    if (!root[key]) return;
    std::string v = r.get_string(root, key, "");
    if (!parse(v, dst)) r.fail(root[key], key, strcat("expected ", choices, ", got '", name_for_message(v), "'"));
  };
  word("norm", m.norm, parse_norm, "layernorm or rmsnorm");
  word("mlp", m.ffn_kind, parse_mlp, "relu, gelu, swiglu or geglu");
  word("positions", m.positions, parse_positions, "learned, rotary or alibi");
  m.bias = r.get_bool(root, "bias", "", m.bias);
  m.tied_embeddings = r.get_bool(root, "tied_embeddings", "", m.tied_embeddings);
  read_mixture_and_latent_keys(r, root, m);

  // The keys against each other (the message names the key that was given).
  auto blame = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (root[k]) return k;
    return *keys.begin();
  };
  if (m.heads % m.kv_heads != 0) {
    const char* k = blame({"kv_heads", "heads"});
    r.fail(root[k] ? root[k] : root, k,
           strcat("heads ", m.heads, " must be a multiple of kv_heads ", m.kv_heads,
                  " (each kv head serves heads / kv_heads query heads)"));
  }
  if (m.kv_heads > m.heads) {
    const char* k = blame({"kv_heads", "heads"});
    r.fail(root[k] ? root[k] : root, k, strcat("kv_heads ", m.kv_heads, " exceeds heads ", m.heads));
  }
  if (m.head_dim == 0 && m.d_model % m.heads != 0) {
    const char* k = blame({"d_model", "heads"});
    r.fail(root[k] ? root[k] : root, k,
           strcat("d_model ", m.d_model, " is not a multiple of heads ", m.heads,
                  " (head_dim = d_model / heads unless head_dim is given)"));
  }
  if (m.positions == TransformerShape::Rotary && m.hd() % 2 != 0) {
    const char* k = blame({"head_dim", "d_model", "heads", "positions"});
    r.fail(root[k] ? root[k] : root, k,
           strcat("rotary positions need an even head_dim, got ", m.hd(),
                  " (rotary rotates the two halves of each head)"));
  }
  if (root["experts_per_token"] && !root["experts"] && m.experts == 0)
    r.fail(root["experts_per_token"], "experts_per_token", "goes with experts (the number of experts)");
  if (root["experts"] && !root["experts_per_token"] && (!preset || preset->experts == 0))
    r.fail(root["experts"], "experts_per_token", "missing (required with experts: how many experts each token runs)");
  if (m.experts_per_token > m.experts) {
    const char* k = blame({"experts_per_token", "experts"});
    r.fail(root[k], k, strcat("experts_per_token ", m.experts_per_token, " exceeds experts ", m.experts));
  }
  check_moe_keys(r, root, m);
  check_mla_keys(r, root, m);
  return m;
}

}  // namespace

const TransformerShape* decoder_of(const WorkloadSpec& w) {
  if (!w.graph.empty()) return nullptr;
  if (w.decoder) return &*w.decoder;
  return find_transformer(w.model);
}

namespace {

// moe_parallel (tensor | expert) and expert_capacity (a factor > 0 on the balanced share of
// routed rows): how a mixture of experts splits over the config's devices.
void read_moe_parallel(YamlReader& r, const YAML::Node& root, const TransformerShape& m, WorkloadSpec& w) {
  for (const char* k : {"moe_parallel", "expert_capacity"})
    if (root[k] && m.experts == 0)
      r.fail(root[k], k, strcat("goes with experts (", m.name, " has a dense MLP: nothing to split by experts)"));
  if (root["moe_parallel"]) {
    const std::string v = r.get_string(root, "moe_parallel", "");
    if (v == "expert")
      w.moe_parallel = WorkloadSpec::MoeParallel::Expert;
    else if (v != "tensor")
      r.fail(root["moe_parallel"], "moe_parallel", "expected tensor or expert, got '" + name_for_message(v) + "'");
  }
  if (!root["expert_capacity"]) return;
  if (w.moe_parallel != WorkloadSpec::MoeParallel::Expert)
    r.fail(root["expert_capacity"], "expert_capacity",
           "goes with moe_parallel: expert (the routed rows each device takes); tensor parallelism drops none");
  w.expert_capacity = r.get_double(root, "expert_capacity", "");
  r.check_range(root, "expert_capacity", "", w.expert_capacity, 0.01, 1e6);
}

// weight_dtype (int8 | int4 | fp8_e4m3 | none) and group_size (weights per f16 scale, along
// each packed linear's input width: an even number dividing every such width).
Quant read_weight_quant(YamlReader& r, const YAML::Node& root, const TransformerShape& m) {
  if (root["group_size"] && !root["weight_dtype"])
    r.fail(root["group_size"], "group_size", "goes with weight_dtype (int8, int4 or fp8_e4m3): the weights per scale");
  if (!root["weight_dtype"]) return {};
  const std::string f = r.get_string(root, "weight_dtype", "");
  Quant q;
  if (!parse_quant_format(f, q.format))
    r.fail(root["weight_dtype"], "weight_dtype", "expected int8, int4, fp8_e4m3 or none, got '" + f + "'");
  if (!q.on()) {
    if (root["group_size"]) r.fail(root["group_size"], "group_size", "goes with a packed weight_dtype, not none");
    return {};
  }
  q.group = r.get_int(root, "group_size", "", 128);
  r.check_range(root, "group_size", "", static_cast<double>(q.group), 2, static_cast<double>(kMaxQuantGroup));
  const char* key = root["group_size"] ? "group_size" : "weight_dtype";
  if (q.group % 2) r.fail(root[key], "group_size", strcat("group_size ", q.group, " is odd (int4 codes pack two per byte)"));
  for (const auto& [what, width] : packed_input_widths(m))
    if (width % q.group)
      r.fail(root[key], "group_size",
             strcat("group_size ", q.group, " does not divide ", what, " = ", width,
                    " (the groups run along each packed weight's input width)"));
  return q;
}

WorkloadSpec load_workload_doc(const YamlDoc& doc, const std::string& path) {
  YamlReader r(doc);
  const YAML::Node& root = doc.root;
  r.require_map(root, "");
  WorkloadSpec w;
  w.file = path;
  w.name = std::filesystem::path(path).stem().string();
  if (root["graph"]) {
    // A graph file carries its own shapes, dtypes and data: only a name may be added.
    for (const char* k : {"weight_dtype", "group_size"})
      if (root[k])
        r.fail(root[k], k, "a graph file stores its weights in the dtypes it declares; packed weights (weight_dtype, "
                           "group_size) apply to the built-in decoders");
    r.check_keys(root, "", {"name", "graph"});
    std::filesystem::path gp(r.get_string(root, "graph", ""));
    if (gp.is_relative()) gp = std::filesystem::path(path).parent_path() / gp;
    w.graph = gp.string();
    if (std::string what = not_a_regular_file(gp.string()); !what.empty())
      r.fail(root["graph"], "graph", strcat(name_for_message(w.graph), ": ", what));
    if (!is_file(gp.string())) r.fail(root["graph"], "graph", "no such file " + name_for_message(w.graph));
    w.name = read_workload_name(r, root, w.name);
    return w;
  }
  w.model = r.get_string(root, "model", "");
  const TransformerShape* preset = find_transformer(w.model);
  const bool decoder = preset || w.model == kDecoderModel;
  const ModelBuilder* mb = find_model_builder(w.model);
  if (!mb && !decoder) {
    std::string all;
    for (const auto& b : model_builders()) all += (all.empty() ? "" : ", ") + b.name;
    r.fail(root["model"], "model",
           strcat("unknown model '", w.model, "'; built-in models: ", all, ", ", kDecoderModel,
                  " (a new decoder described by its keys) (or `graph: PATH` for a graph file)"));
  }
  std::vector<std::string> allowed = {"name",    "model",  "phase", "batch", "seq_len",
                                      "context", "layers", "dtype", "seed"};
  if (decoder) {
    allowed.insert(allowed.end(), {"prompt_len", "gen_len", "weight_dtype", "group_size", "moe_parallel", "expert_capacity"});
    for (const auto& k : decoder_key_names())
      if (k != "layers") allowed.push_back(k);
  } else {
    for (const auto& [k, v] : mb->params) allowed.push_back(k);
  }
  for (const char* k : {"weight_dtype", "group_size", "moe_parallel", "expert_capacity"})
    if (root[k] && !decoder)
      r.fail(root[k], k,
             strcat(k[0] == 'w' || k[0] == 'g' ? "packed weights apply" : "expert parallelism applies",
                    " to the built-in decoders (presets and model: ", kDecoderModel,
                    "), not to the microbenchmark ", w.model));
  r.check_keys(root, "", allowed);
  w.name = read_workload_name(r, root, w.name);
  w.phase = r.get_string(root, "phase", "", "decode");
  if (w.phase != "decode" && w.phase != "prefill")
    r.fail(root["phase"], "phase", "expected decode or prefill, got '" + w.phase + "'");
  w.batch = r.get_int(root, "batch", "", 1);
  r.check_range(root, "batch", "", static_cast<double>(w.batch), 1, decoder ? kMaxDecoderBatch : 1 << 20);
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
  if (!parse_dtype(dt, w.dtype) || !is_floating(w.dtype))
    r.fail(root["dtype"], "dtype", "expected f32, f16 or bf16, got '" + dt + "'");
  if (decoder) {
    w.decoder = read_decoder(r, root, w, preset);  // `layers`, when given, is its layer count
    w.weight_quant = read_weight_quant(r, root, *w.decoder);
    read_moe_parallel(r, root, *w.decoder, w);
    return w;
  }

  for (const auto& [k, dflt] : mb->params) {
    w.params[k] = r.get_int(root, k, "", dflt);
    r.check_range(root, k, "", static_cast<double>(w.params[k]), 1, 1 << 24);
  }
  return w;
}

}  // namespace

WorkloadSpec load_workload_file(const std::string& path) { return load_workload_doc(load_yaml_file(path), path); }

WorkloadSpec load_workload_string(const std::string& yaml, const std::string& source,
                                  const std::vector<std::string>& overrides) {
  YamlDoc doc = load_yaml_string(yaml, source);
  for (const auto& o : overrides) apply_override(doc, o);
  doc.overrides = overrides;
  doc.override_prefix = kWorkloadKeyPrefix;
  // No file: a relative graph path is the working directory's, as on the command line.
  WorkloadSpec w = load_workload_doc(doc, "");
  w.file.clear();
  if (!doc.root["name"])
    w.name = w.graph.empty() ? w.model : std::filesystem::path(w.graph).stem().string();
  return w;
}

std::string workloads_dir() {
  if (std::filesystem::is_directory("workloads")) return "workloads";
  return std::string(LPU_SOURCE_DIR) + "/workloads";
}

WorkloadSpec resolve_workload(const std::string& name_or_path) {
  if (is_graph_file_path(name_or_path)) {
    if (!is_file(name_or_path)) {
      std::string what = not_a_regular_file(name_or_path);
      throw InputError(strcat("graph file '", name_for_message(name_or_path), "': ", what.empty() ? "no such file" : what));
    }
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
    if (const TransformerShape* m = find_transformer(name_or_path)) {
      w.context = 2048;
      w.dtype = DType::f16;
      w.decoder = *m;
    }
    return w;
  }
  if (std::string what = not_a_regular_file(name_or_path); !what.empty())
    throw InputError(strcat("workload '", name_for_message(name_or_path), "': ", what));
  throw InputError(strcat("workload '", name_for_message(name_or_path), "': no such file, and no ",
                          name_for_message(cand), " (see `lpu list workloads`)"));
}

WorkloadSpec resolve_workload(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return resolve_workload(name_or_path);
  WorkloadSpec plain = resolve_workload(name_or_path);  // which file, and the errors for none
  if (!plain.graph.empty())
    throw InputError(strcat("workload ", plain.name, ": --set ", kWorkloadKeyPrefix, overrides.front(),
                            ": a graph file carries its own shapes; workload keys apply to YAML workloads"));
  YamlDoc doc;
  if (!plain.file.empty()) {
    doc = load_yaml_file(plain.file);
  } else {  // a built-in model by name: the YAML of its defaults (resolve_workload above)
    std::string text = "model: " + plain.model + "\n";
    if (find_transformer(plain.model)) text += "context: 2048\ndtype: f16\n";
    doc = load_yaml_string(text, plain.model);
  }
  for (const auto& o : overrides) apply_override(doc, o);
  doc.overrides = overrides;
  doc.override_prefix = kWorkloadKeyPrefix;
  WorkloadSpec w = load_workload_doc(doc, plain.file.empty() ? plain.model : plain.file);
  if (plain.file.empty()) {
    w.file.clear();
    w.name = plain.name;
  }
  return w;
}

Graph build_graph(const WorkloadSpec& w) {
  if (!w.graph.empty()) return load_graph_file(w.graph).graph;
  if (w.decoder) return build_transformer(*w.decoder, w);
  const ModelBuilder* mb = find_model_builder(w.model);
  if (!mb) throw InputError(strcat("workload ", w.name, ": unknown model '", w.model, "'"));
  WorkloadSpec full = w;
  for (const auto& [k, dflt] : mb->params)
    if (!full.params.count(k)) full.params[k] = dflt;
  return mb->build(full);
}

}  // namespace lpu
