// The builder as it was before the decoder keys (issue 15), frozen: the presets must still
// build exactly these graphs (tests/test_workload_keys.cpp). Not used by the workbench.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/error.h"
#include "workload/workload.h"

namespace lpu::legacy {

struct LegacyShape {
  std::string name;
  int64_t layers, d_model, heads, kv_heads, ffn, vocab;
  enum Norm { LayerNorm, RmsNorm } norm;
  enum Ffn { Relu, Gelu, SwiGlu } ffn_kind;
  bool rotary;
  bool bias;
  int64_t max_position;
};

inline const std::vector<LegacyShape>& legacy_shapes() {
  using T = LegacyShape;
  static const std::vector<LegacyShape> s = {
      {"opt-1.3b", 24, 2048, 32, 32, 8192, 50272, T::LayerNorm, T::Relu, false, true, 2048},
      {"opt-6.7b", 32, 4096, 32, 32, 16384, 50272, T::LayerNorm, T::Relu, false, true, 2048},
      {"opt-13b", 40, 5120, 40, 40, 20480, 50272, T::LayerNorm, T::Relu, false, true, 2048},
      {"opt-30b", 48, 7168, 56, 56, 28672, 50272, T::LayerNorm, T::Relu, false, true, 2048},
      {"opt-66b", 64, 9216, 72, 72, 36864, 50272, T::LayerNorm, T::Relu, false, true, 2048},
      {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, T::RmsNorm, T::SwiGlu, true, false, 4096},
      {"llama2-13b", 40, 5120, 40, 40, 13824, 32000, T::RmsNorm, T::SwiGlu, true, false, 4096},
      {"llama2-70b", 80, 8192, 64, 8, 28672, 32000, T::RmsNorm, T::SwiGlu, true, false, 4096},
      {"gpt2", 12, 768, 12, 12, 3072, 50257, T::LayerNorm, T::Gelu, false, true, 1024},
      {"tiny-opt", 2, 64, 4, 4, 128, 96, T::LayerNorm, T::Relu, false, true, 256},
      {"tiny-llama", 2, 64, 4, 2, 96, 96, T::RmsNorm, T::SwiGlu, true, false, 256},
  };
  return s;
}

class LegacyBuilder {
 public:
  LegacyBuilder(Graph& g, DType dt) : g_(g), dt_(dt) {}
  TensorType t(Shape s) const { return {dt_, std::move(s)}; }
  NodeId param(const std::string& name, Shape s) { return g_.add_parameter(name, t(std::move(s))); }
  NodeId input(const std::string& name, Shape s) { return g_.add_placeholder(name, t(std::move(s))); }
  NodeId call(const std::string& op, std::vector<NodeId> in, Attrs a = {}, const std::string& name = "") {
    return g_.add_call(op, std::move(in), std::move(a), name);
  }
  NodeId scalar(double v) { return call("full", {}, {{"value", v}, {"dtype", std::string(dtype_name(dt_))}}, "c"); }
  NodeId reshape(NodeId x, Shape s, const std::string& name = "") { return call("reshape", {x}, {{"shape", s}}, name); }
  NodeId permute(NodeId x, std::vector<int64_t> d, const std::string& name = "") {
    return call("permute", {x}, {{"dims", d}}, name);
  }
  NodeId slice(NodeId x, int64_t dim, int64_t start, int64_t end, const std::string& name = "") {
    return call("slice", {x}, {{"dim", dim}, {"start", start}, {"end", end}}, name);
  }
  // y = x @ W^T (+ b), W stored [out, in] like torch.nn.Linear: column runs are contiguous.
  NodeId linear(NodeId x, const std::string& name, int64_t in, int64_t out, bool bias) {
    NodeId w = param(name + ".weight", {out, in});
    NodeId y = call("matmul", {x, permute(w, {1, 0}, name + "_wT")}, {}, name);
    if (bias) y = call("add", {y, param(name + ".bias", {out})}, {}, name + "_bias");
    return y;
  }
  NodeId norm(const LegacyShape& m, NodeId x, const std::string& name) {
    NodeId w = param(name + ".weight", {m.d_model});
    if (m.norm == LegacyShape::RmsNorm) return call("rms_norm", {x, w}, {{"eps", 1e-6}}, name);
    return call("layer_norm", {x, w, param(name + ".bias", {m.d_model})}, {{"eps", 1e-5}}, name);
  }
  // Rotary embedding on [heads, T, hd]: x*cos + rotate_half(x)*sin, tables [T, hd] per step.
  NodeId rotary(NodeId x, NodeId cos, NodeId sin, int64_t hd, const std::string& name) {
    NodeId x1 = slice(x, 2, 0, hd / 2, name + "_x1");
    NodeId x2 = slice(x, 2, hd / 2, hd, name + "_x2");
    NodeId rot = call("cat", {call("neg", {x2}, {}, name + "_neg"), x1}, {{"dim", int64_t{2}}}, name + "_rot");
    return call("add", {call("mul", {x, cos}, {}, name + "_cos"), call("mul", {rot, sin}, {}, name + "_sin")}, {},
                name);
  }

 private:
  Graph& g_;
  DType dt_;
};

// Updated with the builder (issue 28): a cache attends in two parts sharing the row's maximum
// and sum, normalised after the values.
inline NodeId cached_softmax_v(LegacyBuilder& b, const std::string& p, NodeId s_old, NodeId s_new, NodeId v_old,
                               NodeId v_new) {
  const Attrs row{{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}};
  NodeId mx =
      b.call("maximum",
             {b.call("amax", {s_old}, row, p + "probs_max_cache"), b.call("amax", {s_new}, row, p + "probs_max_new")},
             {}, p + "probs_max");
  auto weights = [&](NodeId scores, const std::string& part) {
    return b.call("exp", {b.call("sub", {scores, mx}, {}, p + "probs_shifted_" + part)}, {}, p + "probs_exp_" + part);
  };
  NodeId e_old = weights(s_old, "cache"), e_new = weights(s_new, "new");
  NodeId sum = b.call(
      "add", {b.call("sum", {e_old}, row, p + "probs_sum_cache"), b.call("sum", {e_new}, row, p + "probs_sum_new")}, {},
      p + "probs_sum");
  NodeId weighted = b.call(
      "add",
      {b.call("matmul", {e_old, v_old}, {}, p + "attn_cache"), b.call("matmul", {e_new, v_new}, {}, p + "attn_new")},
      {}, p + "attn_unnormalised");
  return b.call("div", {weighted, sum}, {}, p + "attn");
}

inline Graph build_legacy(const LegacyShape& m, const WorkloadSpec& w) {
  Graph g(w.name);
  LegacyBuilder b(g, w.dtype);
  if (w.batch != 1)
    throw InputError(strcat("workload ", w.name, ": batch ", w.batch, " is not supported by the built-in ", m.name,
                            " builder yet (batch 1, the LPU design point)"));
  const int64_t T = w.seq_len, C = w.context, d = m.d_model, H = m.heads, Hkv = m.kv_heads, hd = d / H;
  const int64_t G = H / Hkv, layers = w.layers > 0 ? std::min(w.layers, m.layers) : m.layers;
  if (w.phase == "prefill" && T > 1 && C > 0)
    throw InputError(strcat("workload ", w.name, ": prefill with a cached prefix (context > 0) is not supported"));
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

  NodeId x = b.input("hidden", {T, d});
  NodeId cos = -1, sin = -1, mask = -1;
  if (m.rotary) {
    cos = b.input("rope_cos", {T, hd});
    sin = b.input("rope_sin", {T, hd});
  }
  if (T > 1) mask = b.input("causal_mask", {T, T});  // 0 on and below the diagonal, -1e9 above
  std::vector<NodeId> outputs;

  // [T, heads*hd] -> [heads, T, hd]
  auto heads_first = [&](NodeId y, int64_t heads, const std::string& name) {
    return b.permute(b.reshape(y, {T, heads, hd}, name + "_split"), {1, 0, 2}, name + "_heads");
  };
  // [Hkv, S, hd] -> [H, S, hd]: each kv head serves G query heads (grouped-query attention).
  auto share_kv = [&](NodeId y, int64_t S, const std::string& name) {
    if (G == 1) return y;
    NodeId e = b.call("expand", {b.reshape(y, {Hkv, 1, S, hd}, name + "_g")}, {{"shape", Shape{Hkv, G, S, hd}}},
                      name + "_expand");
    return b.reshape(e, {H, S, hd}, name + "_shared");
  };

  for (int64_t l = 0; l < layers; ++l) {
    std::string p = strcat("l", l, ".");
    NodeId h = b.norm(m, x, p + "attn_norm");
    NodeId q = b.linear(h, p + "q_proj", d, d, m.bias);
    NodeId k = b.linear(h, p + "k_proj", d, Hkv * hd, m.bias);
    NodeId v = b.linear(h, p + "v_proj", d, Hkv * hd, m.bias);
    NodeId qh = heads_first(q, H, p + "q");
    NodeId kh = heads_first(k, Hkv, p + "k");
    NodeId vh = heads_first(v, Hkv, p + "v");
    if (m.rotary) {
      qh = b.rotary(qh, cos, sin, hd, p + "q_rope");
      kh = b.rotary(kh, cos, sin, hd, p + "k_rope");
    }
    outputs.push_back(kh);  // the cache append: new keys/values written once
    outputs.push_back(vh);
    NodeId qs = b.call("mul", {qh, b.scalar(scale)}, {}, p + "q_scaled");
    NodeId s_new =
        b.call("matmul", {qs, b.permute(share_kv(kh, T, p + "k_new"), {0, 2, 1}, p + "kT_new")}, {}, p + "scores_new");
    if (mask >= 0) s_new = b.call("add", {s_new, mask}, {}, p + "masked");
    NodeId attn = -1;
    if (C > 0) {
      NodeId k_cache = b.input(p + "k_cache", {Hkv, C, hd});
      NodeId v_cache = b.input(p + "v_cache", {Hkv, C, hd});
      NodeId s_old = b.call("matmul", {qs, b.permute(share_kv(k_cache, C, p + "k_cache"), {0, 2, 1}, p + "kT_cache")},
                            {}, p + "scores_cache");
      NodeId v_old = share_kv(v_cache, C, p + "v_cache");
      NodeId v_new = share_kv(vh, T, p + "v_new");
      attn = cached_softmax_v(b, p, s_old, s_new, v_old, v_new);
    } else {
      NodeId probs = b.call("softmax", {s_new}, {{"dim", int64_t{-1}}}, p + "probs");
      attn = b.call("matmul", {probs, share_kv(vh, T, p + "v_new")}, {}, p + "attn_new");
    }
    NodeId merged = b.reshape(b.permute(attn, {1, 0, 2}, p + "attn_tokens"), {T, d}, p + "attn_merged");
    x = b.call("add", {x, b.linear(merged, p + "o_proj", d, d, m.bias)}, {}, p + "attn_residual");

    NodeId h2 = b.norm(m, x, p + "ffn_norm");
    NodeId f;
    if (m.ffn_kind == LegacyShape::SwiGlu) {
      NodeId gate = b.call("silu", {b.linear(h2, p + "gate_proj", d, m.ffn, false)}, {}, p + "gate_act");
      NodeId up = b.linear(h2, p + "up_proj", d, m.ffn, false);
      f = b.linear(b.call("mul", {gate, up}, {}, p + "glu"), p + "down_proj", m.ffn, d, false);
    } else {
      NodeId up = b.linear(h2, p + "fc1", d, m.ffn, m.bias);
      NodeId act = m.ffn_kind == LegacyShape::Relu
                       ? b.call("relu", {up}, {}, p + "act")
                       : b.call("gelu", {up}, {{"approximate", std::string("tanh")}}, p + "act");
      f = b.linear(act, p + "fc2", m.ffn, d, m.bias);
    }
    x = b.call("add", {x, f}, {}, p + "ffn_residual");
  }
  NodeId last = T > 1 ? b.slice(x, 0, T - 1, T, "last_token") : x;
  NodeId logits = b.linear(b.norm(m, last, "final_norm"), "lm_head", d, m.vocab, false);
  outputs.insert(outputs.begin(), logits);
  g.set_output(outputs);
  return g;
}

}  // namespace lpu::legacy
