#include "serve/gpu_model.h"

#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

#include "support/error.h"
#include "support/input_file.h"
#include "support/yaml_util.h"

namespace lpu::serve {

// ---- the config file ----------------------------------------------------------------------------

namespace {

const std::vector<std::string> kTopKeys = {"name",
                                           "peak_tflops",
                                           "hbm_bandwidth_gbps",
                                           "gemm_efficiency",
                                           "attention_efficiency",
                                           "bandwidth_efficiency",
                                           "elementwise_efficiency",
                                           "kernel_overhead_us",
                                           "roofline_sharpness",
                                           "kernels_per_step",
                                           "cache_copy_passes",
                                           "power_w",
                                           "devices",
                                           "elementwise"};
const std::vector<std::string> kComponents = {"layer_norm",       "rms_norm", "rotary",   "activation",
                                              "gated_activation", "residual", "kv_append"};

// A number in [lo, hi], or above lo when `lo_open` (InputError at the value's line otherwise).
double number(const YamlReader& r, const YAML::Node& map, const std::string& key, const std::string& path, double lo,
              bool lo_open, double hi = INFINITY) {
  double v = r.get_double(map, key, path);
  bool low = lo_open ? !(v > lo) : !(v >= lo);
  if (low || v > hi) {
    std::string range = strcat(lo_open ? "> " : ">= ", lo, std::isinf(hi) ? "" : strcat(" and <= ", hi));
    r.fail(map[key], join_path(path, key), strcat("must be ", range, ", got ", map[key].Scalar()));
  }
  return v;
}

ElementwiseCost component(const YamlReader& r, const YAML::Node& map, const std::string& path) {
  r.check_keys(map, path, {"kernels", "passes"});
  return {number(r, map, "kernels", path, 0, false), number(r, map, "passes", path, 0, false)};
}

void read_elementwise(const YamlReader& r, const YAML::Node& root, GpuConfig::Elementwise& e) {
  YAML::Node map = root["elementwise"];
  if (!map) r.fail(root, "elementwise", "missing required key");
  r.check_keys(map, "elementwise", kComponents);
  std::pair<const char*, ElementwiseCost*> parts[] = {{"layer_norm", &e.layer_norm},
                                                      {"rms_norm", &e.rms_norm},
                                                      {"rotary", &e.rotary},
                                                      {"activation", &e.activation},
                                                      {"gated_activation", &e.gated_activation},
                                                      {"residual", &e.residual},
                                                      {"kv_append", &e.kv_append}};
  for (auto& [key, out] : parts) {
    YAML::Node n = map[key];
    if (!n) r.fail(map, join_path("elementwise", key), "missing required key");
    *out = component(r, n, join_path("elementwise", key));
  }
}

GpuConfig read_config(const YamlDoc& doc) {
  YamlReader r(doc);
  const YAML::Node& root = doc.root;
  if (!root || root.IsNull())
    throw InputError(strcat(doc.file, ": empty; expected a GPU config (configs/gpus/*.yaml)"));
  r.check_keys(root, "", kTopKeys);
  GpuConfig g;
  g.file = doc.file;
  g.name = r.get_string(root, "name", "");
  g.peak_tflops = number(r, root, "peak_tflops", "", 0, true);
  g.hbm_bandwidth_gbps = number(r, root, "hbm_bandwidth_gbps", "", 0, true);
  g.gemm_efficiency = number(r, root, "gemm_efficiency", "", 0, true, 1);
  g.attention_efficiency = number(r, root, "attention_efficiency", "", 0, true, 1);
  g.bandwidth_efficiency = number(r, root, "bandwidth_efficiency", "", 0, true, 1);
  g.elementwise_efficiency = number(r, root, "elementwise_efficiency", "", 0, true, 1);
  g.kernel_overhead_us = number(r, root, "kernel_overhead_us", "", 0, false);
  g.roofline_sharpness = number(r, root, "roofline_sharpness", "", 1, false);
  g.kernels_per_step = r.get_int(root, "kernels_per_step", "");
  number(r, root, "kernels_per_step", "", 0, false);
  g.cache_copy_passes = number(r, root, "cache_copy_passes", "", 0, false);
  g.power_w = number(r, root, "power_w", "", 0, true);
  g.devices = r.get_int(root, "devices", "", 1);
  if (root["devices"]) number(r, root, "devices", "", 1, false, 4096);
  read_elementwise(r, root, g.elementwise);
  return g;
}

}  // namespace

GpuConfig load_gpu_config(const std::string& path) {
  // Only a regular file is read (support/input_file.h): say what is there instead.
  if (std::string why = input_path_problem(path); !why.empty())
    throw InputError(
        strcat("GPU config ", path, ": cannot open: ", why, " (expected a YAML file, as configs/gpus/*.yaml)"));
  return read_config(load_yaml_file(path));
}

GpuConfig load_gpu_config_string(const std::string& text, const std::string& name) {
  return read_config(load_yaml_string(text, name));
}

// ---- the cost -----------------------------------------------------------------------------------

GpuStepCost::GpuStepCost(GpuConfig gpu, ModelDims model) : gpu_(std::move(gpu)), model_(model) {
  const ModelDims& m = model_;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"layers", m.layers},
                         {"d_model", m.d_model},
                         {"heads", m.heads},
                         {"kv_heads", m.kv_heads},
                         {"head_dim", m.head_dim},
                         {"ffn", m.ffn},
                         {"vocab", m.vocab}})
    if (v <= 0) throw InputError(strcat("GPU step cost: model ", name, " must be > 0, got ", v));
  if (!(m.weight_bytes > 0) || !(m.activation_bytes > 0))
    throw InputError("GPU step cost: model weight_bytes and activation_bytes must be > 0");
}

namespace {

// A roofline with a rounded knee: the larger of the compute and memory times when k is large.
// Measured GEMMs near the knee run slower than max() says (tiles, waves, prologues), and k fits that.
double soft_roofline(double compute_s, double memory_s, double k) {
  return std::pow(std::pow(compute_s, k) + std::pow(memory_s, k), 1 / k);
}

// Elementwise kernels and activation bytes per token of one layer: the components the model has.
std::pair<double, double> elementwise_per_layer(const GpuConfig::Elementwise& e, const ModelDims& m) {
  double d = static_cast<double>(m.d_model), q = static_cast<double>(m.heads * m.head_dim);
  double kv = static_cast<double>(m.kv_heads * m.head_dim), f = static_cast<double>(m.ffn);
  std::vector<std::pair<ElementwiseCost, double>> parts = {// (cost, width), once each
                                                           {e.residual, d},
                                                           {e.residual, d},
                                                           {e.kv_append, kv},
                                                           {e.kv_append, kv},
                                                           {m.rms_norm ? e.rms_norm : e.layer_norm, d},
                                                           {m.rms_norm ? e.rms_norm : e.layer_norm, d},
                                                           {m.gated_mlp ? e.gated_activation : e.activation, f}};
  if (m.rotary) {
    parts.push_back({e.rotary, q});
    parts.push_back({e.rotary, kv});
  }
  double kernels = 0, elements = 0;
  for (const auto& [c, width] : parts) {
    kernels += c.kernels;
    elements += c.passes * width;
  }
  return {kernels, elements * m.activation_bytes};
}

}  // namespace

// Per kernel class, the FLOPs over the tensor cores' achieved rate against the bytes over HBM's
// achieved bandwidth (a rounded roofline), plus each kernel's fixed cost. Weights are read once
// per step however many tokens it computes: that is why batching prefills pays.
GpuStepBreakdown GpuStepCost::breakdown(const StepBatch& batch) const {
  const ModelDims& m = model_;
  const GpuConfig& g = gpu_;
  double peak = g.peak_tflops * 1e12 * static_cast<double>(g.devices);
  double bw = g.hbm_bandwidth_gbps * 1e9 * static_cast<double>(g.devices), k = g.roofline_sharpness;
  double layers = static_cast<double>(m.layers), d = static_cast<double>(m.d_model), f = static_cast<double>(m.ffn);
  double q = static_cast<double>(m.heads * m.head_dim), kv = static_cast<double>(m.kv_heads * m.head_dim);
  double tokens = static_cast<double>(batch.total_tokens()), seqs = static_cast<double>(batch.seqs.size());
  double mlp_mats = m.gated_mlp ? 3 : 2;
  GpuStepBreakdown out;

  // The projections and the MLP over every token of the step: 2 FLOPs per weight per token.
  double weights = layers * (2 * d * q + 2 * d * kv + mlp_mats * d * f);
  double gemm_io = layers * tokens * (4 * d + 2 * q + 2 * kv + mlp_mats * f) * m.activation_bytes;  // ins and outs
  out.gemm_s = soft_roofline(2 * weights * tokens / (peak * g.gemm_efficiency),
                             (weights * m.weight_bytes + gemm_io) / (bw * g.bandwidth_efficiency), k);

  // Attention per sequence: its new tokens against the cached context and, causally, each other
  // (flash attention skips the masked half); the K and V of the whole span are read once.
  double attn_c = 0, attn_m = 0, cached = 0;
  for (const SeqWork& s : batch.seqs) {
    double n = static_cast<double>(s.new_tokens), c = static_cast<double>(s.context_before);
    attn_c += 4 * layers * q * n * (c + (n + 1) / 2);
    attn_m += layers * m.activation_bytes * (2 * kv * (c + n) + 2 * q * n);
    cached += c;
  }
  out.attention_s = soft_roofline(attn_c / (peak * g.attention_efficiency), attn_m / (bw * g.bandwidth_efficiency), k);

  // Norms, activations, rotary, residual adds and the KV append: memory-bound, separate kernels.
  auto [ew_kernels, ew_bytes_per_token] = elementwise_per_layer(g.elementwise, m);
  double cache_copy = g.cache_copy_passes * layers * 2 * kv * cached * m.activation_bytes;
  out.elementwise_s = (layers * tokens * ew_bytes_per_token + cache_copy) / (bw * g.elementwise_efficiency);

  // The LM head on each sequence's last token only (the next token is sampled from it).
  double vocab = static_cast<double>(m.vocab);
  out.lm_head_s = soft_roofline(2 * d * vocab * seqs / (peak * g.gemm_efficiency),
                                d * vocab * m.weight_bytes / (bw * g.bandwidth_efficiency), k);

  // GEMMs (q, k, v, o and the MLP's), one attention kernel and the elementwise ones per layer.
  out.kernels = static_cast<double>(g.kernels_per_step) + layers * (4 + mlp_mats + 1 + ew_kernels);
  out.kernels_s = out.kernels * g.kernel_overhead_us * 1e-6;
  return out;
}

StepCost GpuStepCost::cost(const StepBatch& batch) {
  double t = breakdown(batch).total_s();
  return {t, t * gpu_.power_w * static_cast<double>(gpu_.devices)};
}

}  // namespace lpu::serve
