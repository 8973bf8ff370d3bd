// A GPU as a step-cost model: the prefill pool of a disaggregated cluster (GPU prefill + LPU
// decode, as HyperAccel's serving mode ships it). A roofline per kernel class, from a small
// config a GPU architect can read (configs/gpus/*.yaml) and calibrated against prefill latencies
// measured on a real H200 (docs/gpu/prefill-h200-2026-12-03.jsonl; docs/serving.md, "The GPU
// prefill pool"). The model's shape comes as plain numbers, so the serve layer stays independent
// of the compiler: the caller converts the compiler's TransformerShape.
#pragma once
#include <cstdint>
#include <string>

#include "serve/step_cost.h"

namespace lpu::serve {

// A decoder-only transformer as the GPU model needs it. From the compiler's TransformerShape m:
// {m.layers, m.d_model, m.heads, m.kv_heads, m.hd(), m.ffn, m.vocab, m.gated(),
//  m.norm == RmsNorm, m.positions == Rotary, 2, 2, m.parameters()} (fp16). Mixture-of-experts
// layers are not modelled (a dense MLP of `ffn` is priced).
struct ModelDims {
  int64_t layers = 0, d_model = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  bool gated_mlp = false;                         // act(x Wgate) * (x Wup) Wdown (SwiGLU, GeGLU): three MLP matrices
  bool rms_norm = false;                          // RMSNorm (else LayerNorm)
  bool rotary = false;                            // rotary position embeddings, applied to q and k in every layer
  double weight_bytes = 2, activation_bytes = 2;  // per element: fp16/bf16
  int64_t parameters = 0;                         // the whole model's (reported; the cost counts the matrices it reads)
};

// What the software running on the GPU launches per layer outside the GEMMs and attention, and
// the HBM traffic of those kernels: `passes` = activation elements read plus written per token,
// per element of the component's width (an fp32 intermediate counts twice).
struct ElementwiseCost {
  double kernels = 0, passes = 0;
};

struct GpuConfig {
  std::string name;
  std::string file;                   // where it was read from (messages)
  double peak_tflops = 0;             // dense fp16/bf16 tensor-core rate, one device
  double hbm_bandwidth_gbps = 0;      // GB/s (1e9 bytes), one device
  double gemm_efficiency = 0;         // of peak, for the projection and MLP GEMMs and the LM head
  double attention_efficiency = 0;    // of peak, for the attention kernels' FLOPs
  double bandwidth_efficiency = 0;    // of HBM bandwidth, for weights and KV streamed by GEMMs and attention
  double elementwise_efficiency = 0;  // of HBM bandwidth, for the elementwise kernels
  double kernel_overhead_us = 0;      // each kernel's fixed cost on the GPU (launch, ramp-up, tail)
  double roofline_sharpness = 0;      // k in (compute^k + memory^k)^(1/k); large k: max()
  int64_t kernels_per_step = 0;       // kernels outside the layers (embedding, final norm, LM head, ...)
  double cache_copy_passes = 0;       // passes over a sequence's cached KV per step (a concatenating cache)
  double power_w = 0;                 // board power while prefilling, one device: energy = power x time
  int64_t devices = 1;                // tensor parallelism: work split evenly, communication not modelled
  struct Elementwise {
    ElementwiseCost layer_norm, rms_norm;          // per norm (two per layer), d_model wide
    ElementwiseCost rotary;                        // per q and per k, their widths
    ElementwiseCost activation, gated_activation;  // per layer, ffn wide
    ElementwiseCost residual;                      // per residual add (two per layer), d_model wide
    ElementwiseCost kv_append;                     // per K and per V, kv_heads x head_dim wide
  } elementwise;
};

// Strict: an unknown or missing key, a wrong type, a NaN, an infinite, zero or negative value
// (counts may be 0), an efficiency above 1: InputError "FILE:LINE: key: message".
GpuConfig load_gpu_config(const std::string& path);
GpuConfig load_gpu_config_string(const std::string& text, const std::string& name);

// One step's time by kernel class (seconds), as GpuStepCost prices it.
struct GpuStepBreakdown {
  double gemm_s = 0, attention_s = 0, elementwise_s = 0, lm_head_s = 0, kernels_s = 0;
  double kernels = 0;
  double total_s() const { return gemm_s + attention_s + elementwise_s + lm_head_s + kernels_s; }
};

class GpuStepCost : public StepCostModel {
 public:
  // InputError for a model without layers, widths or vocabulary.
  GpuStepCost(GpuConfig gpu, ModelDims model);
  StepCost cost(const StepBatch& batch) override;
  GpuStepBreakdown breakdown(const StepBatch& batch) const;
  const GpuConfig& gpu() const { return gpu_; }
  const ModelDims& model() const { return model_; }

 private:
  GpuConfig gpu_;
  ModelDims model_;
};

}  // namespace lpu::serve
