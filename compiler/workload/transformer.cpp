#include "workload/transformer.h"

#include <algorithm>
#include <cmath>

#include "support/error.h"
#include "workload/workload.h"

namespace lpu {

namespace {
TransformerShape moe(TransformerShape m, int64_t experts, int64_t per_token, int64_t moe_ffn) {
  m.experts = experts;
  m.experts_per_token = per_token;
  m.moe_ffn = moe_ffn;
  return m;
}
// DeepSeek's mixture: a shared expert, sigmoid routing over `groups` groups of which a token
// uses `kept`, the first `dense` layers dense.
TransformerShape deepseek_routing(TransformerShape m, int64_t groups, int64_t kept, int64_t dense) {
  m.shared_experts = 1;
  m.router = TransformerShape::Sigmoid;
  m.expert_groups = groups;
  m.group_topk = kept;
  m.first_dense_layers = dense;
  return m;
}
TransformerShape mla(TransformerShape m, int64_t kv_lora, int64_t q_lora, int64_t rope, int64_t nope, int64_t v) {
  m.attention = TransformerShape::Mla;
  m.kv_lora_rank = kv_lora;
  m.q_lora_rank = q_lora;
  m.qk_rope_head_dim = rope;
  m.qk_nope_head_dim = nope;
  m.v_head_dim = v;
  return m;
}
}  // namespace

const std::vector<TransformerShape>& transformer_shapes() {
  using T = TransformerShape;
  // name, layers, d_model, heads, kv_heads, ffn, vocab, norm, mlp, positions, bias,
  // max_position, head_dim (0: d_model / heads), tied_embeddings: HuggingFace's configs.
  static const std::vector<TransformerShape> s = {
      {"opt-1.3b", 24, 2048, 32, 32, 8192, 50272, T::LayerNorm, T::Relu, T::Learned, true, 2048, 0, true},
      {"opt-6.7b", 32, 4096, 32, 32, 16384, 50272, T::LayerNorm, T::Relu, T::Learned, true, 2048, 0, true},
      {"opt-13b", 40, 5120, 40, 40, 20480, 50272, T::LayerNorm, T::Relu, T::Learned, true, 2048, 0, true},
      {"opt-30b", 48, 7168, 56, 56, 28672, 50272, T::LayerNorm, T::Relu, T::Learned, true, 2048, 0, true},
      {"opt-66b", 64, 9216, 72, 72, 36864, 50272, T::LayerNorm, T::Relu, T::Learned, true, 2048, 0, true},
      {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, T::RmsNorm, T::SwiGlu, T::Rotary, false, 4096, 0, false},
      {"llama2-13b", 40, 5120, 40, 40, 13824, 32000, T::RmsNorm, T::SwiGlu, T::Rotary, false, 4096, 0, false},
      {"llama2-70b", 80, 8192, 64, 8, 28672, 32000, T::RmsNorm, T::SwiGlu, T::Rotary, false, 4096, 0, false},
      {"gpt2", 12, 768, 12, 12, 3072, 50257, T::LayerNorm, T::Gelu, T::Learned, true, 1024, 0, true},
      // Tiny models for functional tests: every feature of the big ones at toy sizes; their
      // max_position (256) is a choice, small enough to test the limit cheaply.
      {"tiny-opt", 2, 64, 4, 4, 128, 96, T::LayerNorm, T::Relu, T::Learned, true, 256, 0, true},
      {"tiny-llama", 2, 64, 4, 2, 96, 96, T::RmsNorm, T::SwiGlu, T::Rotary, false, 256, 0, false},
      // Mixtures of experts (HuggingFace's configs): Mixtral-8x7B (8 experts, top-2, softmax
      // routing renormalised over the two) and Qwen3-30B-A3B (128 experts of FFN 768, top-8;
      // its per-head q/k norms are not modelled: d_model-sized vectors, no traffic to speak of).
      moe({"mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, T::RmsNorm, T::SwiGlu, T::Rotary, false, 32768, 0, false}, 8,
          2, 0),
      moe({"qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, T::RmsNorm, T::SwiGlu, T::Rotary, false, 40960, 128, false},
          128, 8, 768),
      // A tiny mixture for functional tests: DeepSeek-V3's routing (sigmoid scores, a selection
      // bias, 4 groups of 2 experts, the best 2 groups), a shared expert, the first layer dense.
      deepseek_routing(
          moe({"tiny-moe", 2, 64, 4, 2, 96, 96, T::RmsNorm, T::SwiGlu, T::Rotary, false, 256, 0, false}, 8, 2, 32), 4,
          2, 1),
      // DeepSeek-V3 (671B, 37B active): multi-head latent attention (latent 512 + rotary key
      // 64 cached per token and layer), 256 routed experts of 2048 (top-8, sigmoid routing, 8
      // groups of which a token uses 4), one shared expert, the first 3 layers dense. Its YaRN
      // rotary scaling is not modelled (tables are graph inputs either way).
      mla(deepseek_routing(moe({"deepseek-v3", 61, 7168, 128, 128, 18432, 129280, T::RmsNorm, T::SwiGlu, T::Rotary,
                                false, 163840, 0, false},
                               256, 8, 2048),
                           8, 4, 3),
          512, 1536, 64, 128, 128),
      // DeepSeek-V3's parts at toy size (the HF fixture's shapes: tests/fixtures/hf/hf_deepseek_v3_*).
      mla(deepseek_routing(
              moe({"tiny-deepseek", 2, 64, 4, 4, 96, 96, T::RmsNorm, T::SwiGlu, T::Rotary, false, 256, 0, false}, 8, 2,
                  32),
              2, 1, 1),
          32, 48, 8, 16, 16),
  };
  return s;
}

const TransformerShape* find_transformer(const std::string& name) {
  for (const auto& m : transformer_shapes())
    if (m.name == name) return &m;
  return nullptr;
}

namespace {
const char* const kNorms[] = {"layernorm", "rmsnorm"};
const char* const kMlps[] = {"relu", "gelu", "swiglu", "geglu"};
const char* const kPositions[] = {"learned", "rotary", "alibi"};
const char* const kRouters[] = {"softmax", "sigmoid"};
const char* const kAttentions[] = {"mha", "mla"};
const char* const kMlaForms[] = {"absorbed", "naive", "auto"};

template <typename E, size_t N>
bool parse_enum(const char* const (&names)[N], const std::string& s, E& out) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}
}  // namespace

const char* norm_name(TransformerShape::Norm n) { return kNorms[n]; }
const char* mlp_name(TransformerShape::Ffn f) { return kMlps[f]; }
const char* positions_name(TransformerShape::Positions p) { return kPositions[p]; }
bool parse_norm(const std::string& s, TransformerShape::Norm& out) { return parse_enum(kNorms, s, out); }
bool parse_mlp(const std::string& s, TransformerShape::Ffn& out) { return parse_enum(kMlps, s, out); }
bool parse_positions(const std::string& s, TransformerShape::Positions& out) { return parse_enum(kPositions, s, out); }
const char* router_name(TransformerShape::Router r) { return kRouters[r]; }
bool parse_router(const std::string& s, TransformerShape::Router& out) { return parse_enum(kRouters, s, out); }
const char* attention_name(TransformerShape::Attention a) { return kAttentions[a]; }
bool parse_attention(const std::string& s, TransformerShape::Attention& out) { return parse_enum(kAttentions, s, out); }
const char* mla_form_name(TransformerShape::MlaForm f) { return kMlaForms[f]; }
bool parse_mla_form(const std::string& s, TransformerShape::MlaForm& out) { return parse_enum(kMlaForms, s, out); }

int64_t TransformerShape::parameters() const {
  const int64_t d = d_model, q = heads * hd(), kv = kv_heads * hd();
  const int64_t norm_w = norm == LayerNorm ? 2 * d : d;
  int64_t attn = d * q + 2 * d * kv + q * d + (bias ? q + 2 * kv + d : 0);
  if (mla()) {
    const int64_t qk = heads * (qk_nope_head_dim + qk_rope_head_dim);
    attn = q_lora_rank > 0 ? d * q_lora_rank + q_lora_rank + q_lora_rank * qk : d * qk;  // queries
    attn += d * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank;                        // latent + its norm
    attn += kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim) + heads * v_head_dim * d;
  }
  const int64_t mats = gated() ? 3 : 2;
  const int64_t dense = mats * d * ffn + (bias ? (gated() ? 0 : ffn + d) : 0);
  int64_t moe = experts * mats * d * expert_ffn() + d * experts;  // the experts and the router
  moe += mats * d * shared_experts * expert_ffn() + (router == Sigmoid ? experts : 0);
  const int64_t dense_layers = experts > 0 ? std::min(first_dense_layers, layers) : layers;
  int64_t total = layers * (attn + 2 * norm_w) + dense_layers * dense + (layers - dense_layers) * moe + norm_w;
  total += vocab * d * (tied_embeddings ? 1 : 2);       // embedding table (+ LM head)
  if (positions == Learned) total += max_position * d;  // learned position table
  return total;
}

std::vector<std::pair<std::string, std::string>> decoder_keys(const TransformerShape& m) {
  auto s = [](int64_t v) { return std::to_string(v); };
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  std::vector<std::pair<std::string, std::string>> k = {{"layers", s(m.layers)},
                                                        {"d_model", s(m.d_model)},
                                                        {"heads", s(m.heads)},
                                                        {"kv_heads", s(m.kv_heads)},
                                                        {"head_dim", s(m.hd())},
                                                        {"ffn", s(m.ffn)},
                                                        {"vocab", s(m.vocab)},
                                                        {"norm", norm_name(m.norm)},
                                                        {"mlp", mlp_name(m.ffn_kind)},
                                                        {"positions", positions_name(m.positions)},
                                                        {"bias", b(m.bias)},
                                                        {"tied_embeddings", b(m.tied_embeddings)},
                                                        {"max_position", s(m.max_position)}};
  if (m.experts > 0) {
    k.push_back({"experts", s(m.experts)});
    k.push_back({"experts_per_token", s(m.experts_per_token)});
    k.push_back({"moe_ffn", s(m.expert_ffn())});
    k.push_back({"shared_experts", s(m.shared_experts)});
    k.push_back({"router", router_name(m.router)});
    k.push_back({"expert_groups", s(m.expert_groups)});
    k.push_back({"group_topk", s(m.group_topk)});
    k.push_back({"first_dense_layers", s(m.first_dense_layers)});
  }
  if (m.mla()) {
    k.push_back({"attention", attention_name(m.attention)});
    k.push_back({"kv_lora_rank", s(m.kv_lora_rank)});
    k.push_back({"q_lora_rank", s(m.q_lora_rank)});
    k.push_back({"qk_rope_head_dim", s(m.qk_rope_head_dim)});
    k.push_back({"qk_nope_head_dim", s(m.qk_nope_head_dim)});
    k.push_back({"v_head_dim", s(m.v_head_dim)});
    k.push_back({"mla_form", mla_form_name(m.mla_form)});
  }
  return k;
}

std::vector<std::pair<std::string, int64_t>> packed_input_widths(const TransformerShape& m) {
  std::vector<std::pair<std::string, int64_t>> w = {{"d_model", m.d_model}};  // q/k/v, gate/up, lm_head
  if (m.mla()) {
    w.push_back({"heads x v_head_dim (o_proj)", m.heads * m.v_head_dim});
    if (m.q_lora_rank > 0) w.push_back({"q_lora_rank (q_b_proj)", m.q_lora_rank});
  } else {
    w.push_back({"heads x head_dim (o_proj)", m.heads * m.hd()});
  }
  const bool moe = m.experts > 0;
  if (!moe || m.first_dense_layers > 0) w.push_back({"ffn (down_proj)", m.ffn});
  if (moe) w.push_back({"moe_ffn (the experts' down_proj)", m.expert_ffn()});
  if (moe && m.shared_experts > 0)
    w.push_back({"shared_experts x moe_ffn (shared down_proj)", m.shared_experts * m.expert_ffn()});
  return w;
}

MlaChoice choose_mla_form(const TransformerShape& m, const WorkloadSpec& w) {
  MlaChoice c;
  const double H = static_cast<double>(m.heads), L = static_cast<double>(m.kv_lora_rank);
  const double n = static_cast<double>(m.qk_nope_head_dim), r = static_cast<double>(m.qk_rope_head_dim);
  const double v = static_cast<double>(m.v_head_dim);
  auto add = [&](double C, double T, double times) {
    c.absorbed_macs += times * H * (T * n * L + T * (C + T) * (2 * L + r) + T * L * v);
    c.naive_macs += times * H * ((C + T) * L * (n + v) + T * (C + T) * (n + r + v));
  };
  if (w.ragged.empty())
    add(static_cast<double>(w.context), static_cast<double>(w.seq_len), static_cast<double>(w.batch));
  for (const auto& s : w.ragged) add(static_cast<double>(s.context), static_cast<double>(s.tokens), 1);
  c.form = m.mla_form != TransformerShape::Auto ? m.mla_form
           : c.absorbed_macs <= c.naive_macs    ? TransformerShape::Absorbed
                                                : TransformerShape::Naive;
  return c;
}

std::string describe_mla_choice(const TransformerShape& m, const WorkloadSpec& w) {
  if (!m.mla()) return "";
  const MlaChoice c = choose_mla_form(m, w);
  auto macs = [](double x) { return x < 9e18 ? std::to_string(std::llround(x)) : format_double(x); };
  return strcat("latent attention: mla_form ", mla_form_name(m.mla_form),
                m.mla_form == TransformerShape::Auto ? strcat(" -> ", mla_form_name(c.form)) : std::string(),
                ": attention core ", macs(c.absorbed_macs), " MACs a layer absorbed, ", macs(c.naive_macs),
                " naive (both read the same latent cache and kv_b_proj; auto takes the fewer MACs)\n");
}

std::string describe_decoder(const TransformerShape& m) {
  std::string out;
  for (const auto& [k, v] : decoder_keys(m)) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

namespace {

class Builder {
 public:
  Builder(Graph& g, DType dt, Quant packed = {}) : g_(g), dt_(dt), packed_(packed) {}
  TensorType t(Shape s) const { return {dt_, std::move(s)}; }
  DType dtype() const { return dt_; }
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
  // `pack`: W is stored packed when the workload asks (weight_dtype; a router stays unpacked,
  // as GPTQ/AWQ checkpoints keep it).
  NodeId linear(NodeId x, const std::string& name, int64_t in, int64_t out, bool bias, bool pack = true) {
    NodeId w = param(name + ".weight", {out, in});
    if (pack) packed(w);
    NodeId y = call("matmul", {x, permute(w, {1, 0}, name + "_wT")}, {}, name);
    if (bias) y = call("add", {y, param(name + ".bias", {out})}, {}, name + "_bias");
    return y;
  }
  // Marks parameter `w` ([..., in]) as stored packed (graph.h, parameter_quant) when the
  // workload packs its weights; the groups run along `in`, which they must divide.
  void packed(NodeId w) {
    if (!packed_.on()) return;
    Node& n = g_.node(w);
    if (!packable(n.type, packed_))
      throw InputError(strcat("group_size ", packed_.group, " does not divide the input width ", n.type.shape.back(),
                              " of ", n.name, " (", type_str(n.type), "; a tensor-parallel share when devices > 1)"));
    n.attrs["quant"] = std::string(quant_format_name(packed_.format));
    n.attrs["group"] = packed_.group;
  }
  NodeId norm(TransformerShape::Norm kind, int64_t d, NodeId x, const std::string& name) {
    NodeId w = param(name + ".weight", {d});
    if (kind == TransformerShape::RmsNorm) return call("rms_norm", {x, w}, {{"eps", 1e-6}}, name);
    return call("layer_norm", {x, w, param(name + ".bias", {d})}, {{"eps", 1e-5}}, name);
  }
  NodeId activation(TransformerShape::Ffn kind, NodeId x, const std::string& name) {
    switch (kind) {
      case TransformerShape::Relu: return call("relu", {x}, {}, name);
      case TransformerShape::SwiGlu: return call("silu", {x}, {}, name);
      case TransformerShape::Gelu:
      case TransformerShape::GeGlu: return call("gelu", {x}, {{"approximate", std::string("tanh")}}, name);
    }
    throw InternalError("activation: bad mlp kind");
  }
  // Rotary embedding on [..., T, hd] (dim `d` is hd): x*cos + rotate_half(x)*sin, tables [T, hd].
  NodeId rotary(NodeId x, NodeId cos, NodeId sin, int64_t hd, int64_t d, const std::string& name) {
    NodeId x1 = slice(x, d, 0, hd / 2, name + "_x1");
    NodeId x2 = slice(x, d, hd / 2, hd, name + "_x2");
    NodeId rot = call("cat", {call("neg", {x2}, {}, name + "_neg"), x1}, {{"dim", d}}, name + "_rot");
    return call("add", {call("mul", {x, cos}, {}, name + "_cos"), call("mul", {rot, sin}, {}, name + "_sin")}, {},
                name);
  }

 private:
  Graph& g_;
  DType dt_;
  Quant packed_;
};

// One forward step of a decoder. The activations are [N, d_model] rows, N = batch * seq_len;
// the attention tensors are [heads, T, head_dim] per sequence, with a leading batch dim when
// batch > 1 (batched() below adds it, so batch 1 keeps the graphs it always had). layer()
// builds one decoder layer from the shape alone: the one place a layer's structure is written.
class DecoderBuilder {
 public:
  DecoderBuilder(Graph& g, const TransformerShape& m, const WorkloadSpec& w)
      : b_(g, w.dtype, w.weight_quant),
        m_(m),
        B_(w.batch),
        T_(w.seq_len),
        C_(w.context),
        N_(w.tokens()),
        d_(m.d_model),
        hd_(m.hd()),
        G_(m.heads / m.kv_heads),
        o_(w.batch > 1 ? 1 : 0),
        tp_(w.tp),
        rank_(w.tp_rank),
        Hl_(m.heads / w.tp),
        Hkvl_(m.kv_heads / w.tp),
        ffn_(m.ffn / w.tp),
        vocab_((w.tp_rank + 1) * m.vocab / w.tp - w.tp_rank * m.vocab / w.tp),
        ep_(w.tp > 1 && m.experts > 0 && w.moe_parallel == WorkloadSpec::MoeParallel::Expert),
        w_(w),
        ragged_(w.ragged),
        absorbed_(choose_mla_form(m, w).form == TransformerShape::Absorbed) {}

  // The step's inputs other than the KV caches (created first: graph inputs in this order).
  NodeId inputs() {
    NodeId x = b_.input("hidden", {N_, d_});
    if (m_.positions == TransformerShape::Rotary) {  // a row per token: a ragged step's sequences in order
      cos_ = b_.input("rope_cos", {N_ / B_, m_.rope_dim()});
      sin_ = b_.input("rope_sin", {N_ / B_, m_.rope_dim()});
    }
    if (!ragged_.empty()) return ragged_inputs(x);
    if (T_ > 1) mask_ = b_.input("causal_mask", {T_, T_});  // 0 on and below the diagonal, -1e9 above
    if (m_.positions == TransformerShape::Alibi)
      alibi_ = b_.input("alibi", {Hl_, T_, C_ + T_});  // slope[h] * (key position - query position)
    return x;
  }

  // One decoder layer: x [N, d] -> [N, d]; appends the layer's new keys and values to `kv`.
  NodeId layer(int64_t l, NodeId x, std::vector<NodeId>& kv) {
    std::string p = strcat("l", l, ".");
    NodeId h = b_.norm(m_.norm, d_, x, p + "attn_norm");
    x = b_.call("add", {x, attention(p, h, kv)}, {}, p + "attn_residual");
    NodeId h2 = b_.norm(m_.norm, d_, x, p + "ffn_norm");
    NodeId f = m_.moe_layer(l) ? moe(p, h2) : mlp(p, h2);
    return b_.call("add", {x, f}, {}, p + "ffn_residual");
  }

  // The final norm and the LM head on each sequence's last token: [batch, vocab].
  NodeId head(NodeId x) {
    NodeId last = x;
    if (!ragged_.empty()) {
      std::vector<NodeId> rows;
      for (size_t i = 0; i < ragged_.size(); ++i)
        rows.push_back(b_.slice(x, 0, seq_end_[i] - 1, seq_end_[i], strcat("s", i, ".last_token")));
      last = b_.call("cat", rows, {{"dim", int64_t{0}}}, "last_tokens");
    }
    if (T_ > 1 && B_ == 1 && ragged_.empty()) last = b_.slice(x, 0, T_ - 1, T_, "last_token");
    if (T_ > 1 && B_ > 1)
      last = b_.reshape(b_.slice(b_.reshape(x, {B_, T_, d_}, "sequences"), 1, T_ - 1, T_, "last_token"), {B_, d_},
                        "last_tokens");
    NodeId logits = b_.linear(b_.norm(m_.norm, d_, last, "final_norm"), "lm_head", d_, vocab_, false);
    if (tp_ == 1) return logits;
    // The LM head split by vocabulary: every rank gets the whole logits.
    std::vector<int64_t> sizes;
    for (int64_t r = 0; r < tp_; ++r) sizes.push_back((r + 1) * m_.vocab / tp_ - r * m_.vocab / tp_);
    return b_.call("all_gather", {logits}, {{"dim", int64_t{1}}, {"rank", rank_}, {"sizes", sizes}},
                   "lm_head_allgather");
  }

 private:
  Shape batched(Shape s) const {
    if (o_) s.insert(s.begin(), B_);
    return s;
  }
  std::vector<int64_t> batched_perm(const std::vector<int64_t>& p) const {
    if (!o_) return p;
    std::vector<int64_t> r = {0};
    for (int64_t v : p) r.push_back(v + 1);
    return r;
  }
  // [N, heads*hd] -> [(B,) heads, T, hd]
  NodeId heads_first(NodeId y, int64_t heads, const std::string& name) { return heads_first(y, heads, T_, name); }
  NodeId heads_first(NodeId y, int64_t heads, int64_t T, const std::string& name) {
    return b_.permute(b_.reshape(y, batched({T, heads, hd_}), name + "_split"), batched_perm({1, 0, 2}),
                      name + "_heads");
  }
  // [(B,) Hkv, S, hd] -> [(B,) H, S, hd]: each kv head serves G query heads (grouped-query attention).
  // Under tensor parallelism this rank's heads only (whole KV groups).
  NodeId share_kv(NodeId y, int64_t S, const std::string& name) {
    if (G_ == 1) return y;
    NodeId e = b_.call("expand", {b_.reshape(y, batched({Hkvl_, 1, S, hd_}), name + "_g")},
                       {{"shape", batched({Hkvl_, G_, S, hd_})}}, name + "_expand");
    return b_.reshape(e, batched({Hl_, S, hd_}), name + "_shared");
  }
  // Row-parallel linear: each rank's partial product, summed over the ESL, then the bias once.
  NodeId row_parallel(NodeId x, const std::string& name, int64_t in, int64_t out, bool bias) {
    if (tp_ == 1) return b_.linear(x, name, in, out, bias);
    NodeId y = all_reduce(b_.linear(x, name, in, out, false), name);
    return bias ? b_.call("add", {y, b_.param(name + ".bias", {out})}, {}, name + "_bias") : y;
  }
  NodeId all_reduce(NodeId x, const std::string& name) {
    return b_.call("all_reduce", {x}, {{"group", tp_}, {"rank", rank_}}, name + "_allreduce");
  }
  // [(B,) H, S, hd] -> [(B,) H, hd, S]
  NodeId transposed(NodeId y, const std::string& name) { return b_.permute(y, batched_perm({0, 2, 1}), name); }

  NodeId attention(const std::string& p, NodeId h, std::vector<NodeId>& kv) {
    if (m_.mla()) return row_parallel(mla(p, h, kv), p + "o_proj", Hl_ * m_.v_head_dim, d_, false);
    const bool bias = m_.bias;
    const int64_t q_width = Hl_ * hd_, kv_width = Hkvl_ * hd_;
    NodeId q = b_.linear(h, p + "q_proj", d_, q_width, bias);
    NodeId k = b_.linear(h, p + "k_proj", d_, kv_width, bias);
    NodeId v = b_.linear(h, p + "v_proj", d_, kv_width, bias);
    NodeId merged = ragged_.empty() ? attend(p, Seq{q, k, v, cos_, sin_, mask_, alibi_, T_, C_}, kv)
                                    : ragged_attention(p, q, k, v, kv);
    return row_parallel(merged, p + "o_proj", q_width, d_, bias);
  }

  // A sequence's attention inputs: its rows of q, k, v ([T, width]), its rope rows, mask and
  // ALiBi bias (-1: none), T new tokens on C cached (its cache inputs are made here).
  struct Seq {
    NodeId q, k, v, cos, sin, mask, alibi;
    int64_t T, C;
  };

  // Attention of one sequence (or of the lockstep batch): [T, heads * hd] rows out, its new
  // keys and values appended to `kv` (the cache append: written once).
  NodeId attend(const std::string& p, Seq s, std::vector<NodeId>& kv) {
    const int64_t q_width = Hl_ * hd_, last = o_ + 2, T = s.T, C = s.C;
    NodeId qh = heads_first(s.q, Hl_, T, p + "q");
    NodeId kh = heads_first(s.k, Hkvl_, T, p + "k");
    NodeId vh = heads_first(s.v, Hkvl_, T, p + "v");
    if (m_.positions == TransformerShape::Rotary) {
      qh = b_.rotary(qh, s.cos, s.sin, hd_, last, p + "q_rope");
      kh = b_.rotary(kh, s.cos, s.sin, hd_, last, p + "k_rope");
    }
    kv.push_back(kh);
    kv.push_back(vh);
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd_));
    NodeId qs = b_.call("mul", {qh, b_.scalar(scale)}, {}, p + "q_scaled");
    NodeId s_new =
        b_.call("matmul", {qs, transposed(share_kv(kh, T, p + "k_new"), p + "kT_new")}, {}, p + "scores_new");
    if (s.mask >= 0) s_new = b_.call("add", {s_new, s.mask}, {}, p + "masked");
    NodeId attn = -1;
    if (C > 0) {
      NodeId k_cache = b_.input(p + "k_cache", batched({Hkvl_, C, hd_}));
      NodeId v_cache = b_.input(p + "v_cache", batched({Hkvl_, C, hd_}));
      NodeId s_old = b_.call("matmul", {qs, transposed(share_kv(k_cache, C, p + "k_cache"), p + "kT_cache")}, {},
                             p + "scores_cache");
      if (s.alibi >= 0) {  // the bias is [H, T, C + T], one for the whole batch
        s_old = b_.call("add", {s_old, b_.slice(s.alibi, 2, 0, C, p + "alibi_cache")}, {}, p + "alibi_scores_cache");
        s_new = b_.call("add", {s_new, b_.slice(s.alibi, 2, C, C + T, p + "alibi_new")}, {}, p + "alibi_scores_new");
      }
      NodeId v_old = share_kv(v_cache, C, p + "v_cache");  // in this order: the graph's node order
      NodeId v_new = share_kv(vh, T, p + "v_new");
      attn = cached_softmax_v(p, s_old, s_new, v_old, v_new);
    } else {
      if (s.alibi >= 0) s_new = b_.call("add", {s_new, s.alibi}, {}, p + "alibi_scores");
      NodeId probs = b_.call("softmax", {s_new}, {{"dim", int64_t{-1}}}, p + "probs");
      attn = b_.call("matmul", {probs, share_kv(vh, T, p + "v_new")}, {}, p + "attn_new");
    }
    return b_.reshape(b_.permute(attn, batched_perm({1, 0, 2}), p + "attn_tokens"), {B_ * T, q_width},
                      p + "attn_merged");
  }

  // softmax([s_old, s_new]) @ [v_old; v_new] without concatenating the cached and the new
  // scores: the two parts share the row's maximum and sum, and the weighted values are
  // normalised once at the end ([T, hd] divided by the sum instead of [T, C + T]
  // probabilities). The same value as the concatenated form (exp(x - m) / sum, distributed
  // over the matmul), in ops that fuse: the matrix engine streams K and V of the cache through
  // one kernel with the vector work between them, and the new key and value fold in as a
  // second part rather than a copy of every cached score (docs/scheduling.md, "Decode attention").
  NodeId cached_softmax_v(const std::string& p, NodeId s_old, NodeId s_new, NodeId v_old, NodeId v_new) {
    const Attrs row{{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}};
    NodeId m = b_.call(
        "maximum",
        {b_.call("amax", {s_old}, row, p + "probs_max_cache"), b_.call("amax", {s_new}, row, p + "probs_max_new")}, {},
        p + "probs_max");
    auto weights = [&](NodeId scores, const std::string& part) {
      return b_.call("exp", {b_.call("sub", {scores, m}, {}, p + "probs_shifted_" + part)}, {},
                     p + "probs_exp_" + part);
    };
    NodeId e_old = weights(s_old, "cache"), e_new = weights(s_new, "new");
    NodeId sum = b_.call(
        "add", {b_.call("sum", {e_old}, row, p + "probs_sum_cache"), b_.call("sum", {e_new}, row, p + "probs_sum_new")},
        {}, p + "probs_sum");
    NodeId weighted = b_.call("add",
                              {b_.call("matmul", {e_old, v_old}, {}, p + "attn_cache"),
                               b_.call("matmul", {e_new, v_new}, {}, p + "attn_new")},
                              {}, p + "attn_unnormalised");
    return b_.call("div", {weighted, sum}, {}, p + "attn");
  }

  // A ragged step's inputs beyond the hidden rows and rope tables, sequence by sequence: the
  // causal mask of a sequence of more than one new token, and its ALiBi bias.
  NodeId ragged_inputs(NodeId x) {
    int64_t end = 0;
    for (size_t i = 0; i < ragged_.size(); ++i) {
      const auto& r = ragged_[i];
      const std::string s = strcat("s", i, ".");
      seq_end_.push_back(end += r.tokens);
      seq_mask_.push_back(r.tokens > 1 ? b_.input(s + "causal_mask", {r.tokens, r.tokens}) : NodeId{-1});
      seq_alibi_.push_back(m_.positions == TransformerShape::Alibi
                               ? b_.input(s + "alibi", {Hl_, r.tokens, r.context + r.tokens})
                               : NodeId{-1});
    }
    return x;
  }

  // Attention sequence by sequence over its own rows, the results back in row order.
  NodeId ragged_attention(const std::string& p, NodeId q, NodeId k, NodeId v, std::vector<NodeId>& kv) {
    std::vector<NodeId> rows;
    for (size_t i = 0; i < ragged_.size(); ++i) {
      const auto& r = ragged_[i];
      const std::string ps = strcat(p, "s", i, ".");
      const int64_t a = seq_end_[i] - r.tokens, e = seq_end_[i];
      auto part = [&](NodeId t, const char* what) { return b_.slice(t, 0, a, e, ps + what); };
      Seq s{part(q, "q_rows"), part(k, "k_rows"), part(v, "v_rows"), -1,       -1,
            seq_mask_[i],      seq_alibi_[i],     r.tokens,          r.context};
      if (m_.positions == TransformerShape::Rotary) {
        s.cos = part(cos_, "rope_cos");
        s.sin = part(sin_, "rope_sin");
      }
      rows.push_back(attend(ps, s, kv));
    }
    return rows.size() == 1 ? rows[0] : b_.call("cat", rows, {{"dim", int64_t{0}}}, p + "attn_rows");
  }

  // ---- Multi-head latent attention (DeepSeek-V2/V3) -------------------------------------------
  // [H, N, w] (heads first over every token of the step) <-> [(B,) H, T, w] (per sequence).
  NodeId per_sequence(NodeId x, int64_t w, const std::string& name) {
    if (!o_) return x;
    return b_.permute(b_.reshape(x, {Hl_, B_, T_, w}, name + "_bt"), {1, 0, 2, 3}, name);
  }
  NodeId all_tokens(NodeId x, int64_t w, const std::string& name) {
    if (!o_) return x;
    return b_.reshape(b_.permute(x, {1, 0, 2, 3}, name + "_hb"), {Hl_, N_, w}, name);
  }
  // [(B,) S, w] rows every head reads alike -> [(B,) H, S, w] (a view: one stream serves all heads).
  NodeId every_head(NodeId x, int64_t S, int64_t w, const std::string& name) {
    NodeId one = b_.reshape(x, batched({1, S, w}), name + "_1");
    return b_.call("expand", {one}, {{"shape", batched({Hl_, S, w})}}, name);
  }
  NodeId matmul(NodeId a, NodeId b, const std::string& name) { return b_.call("matmul", {a, b}, {}, name); }
  NodeId add(NodeId a, NodeId b, const std::string& name) { return b_.call("add", {a, b}, {}, name); }

  // The step's rows, projected once for every sequence (each weight read once per step).
  struct MlaRows {
    NodeId q_nope, q_pe;  // [H, N, nope], [H, N, rope] (before rotary)
    NodeId q_latent;      // absorbed: q_nope through each head's W_uk, [H, N, L]
    NodeId latent, pe;    // [N, L] (normed), [N, rope] (before rotary)
    NodeId w_kvb, w_uv;   // kv_b_proj [H * (nope + v), L]; absorbed: each head's W_uv [H, v, L]
  };
  // One sequence's part (or the lockstep batch's): T new tokens on C cached.
  struct MlaSeq {
    int64_t T, C;
    NodeId mask;                 // [T, T] or -1
    NodeId q_nope, q_pe;         // [(B,) H, T, nope], [(B,) H, T, rope] (rotated)
    NodeId q_latent;             // absorbed: [(B,) H, T, L]
    NodeId latent, k_pe;         // [(B,) T, L], [(B,) T, rope] (rotated): the cache append
    NodeId lat_cache, pe_cache;  // [(B,) C, L], [(B,) C, rope], or -1 without a cache
  };

  // The step's latent attention: [N, heads * v_head_dim] rows for o_proj. The cache of a layer
  // is its latent [(B,) C, kv_lora_rank] and rotary key [(B,) C, qk_rope_head_dim], appended to
  // `kv` for the new tokens. Under tensor parallelism each device computes its heads from the
  // whole latent (the down-projections and the cache are on every device). A ragged step runs
  // the core sequence by sequence on the shared projections.
  NodeId mla(const std::string& p, NodeId h, std::vector<NodeId>& kv) {
    const MlaRows r = mla_rows(p, h);
    const int64_t rope = m_.qk_rope_head_dim, L = m_.kv_lora_rank, vd = m_.v_head_dim;
    const bool absorbed = absorbed_;
    std::vector<NodeId> parts;  // per sequence: absorbed [H, T, L], naive [T, H * vd]
    if (ragged_.empty()) {
      MlaSeq s{T_, C_, mask_, -1, -1, -1, -1, -1, -1, -1};
      s.q_pe = b_.rotary(per_sequence(r.q_pe, rope, p + "q_pe_seq"), cos_, sin_, rope, o_ + 2, p + "q_pe");
      if (absorbed) s.q_latent = per_sequence(r.q_latent, L, p + "q_latent");
      if (!absorbed) s.q_nope = per_sequence(r.q_nope, m_.qk_nope_head_dim, p + "q_nope_seq");
      s.latent = b_.reshape(r.latent, batched({T_, L}), p + "latent");
      s.k_pe = seq_rotary_key(p, r.pe, cos_, sin_, T_);
      parts.push_back(mla_sequence(p, r, s, kv));
      if (absorbed) parts[0] = all_tokens(parts[0], L, p + "o_latent_all");
    } else {
      for (size_t i = 0; i < ragged_.size(); ++i) {
        const int64_t T = ragged_[i].tokens, e = seq_end_[i], a = e - T;
        const std::string ps = strcat(p, "s", i, ".");
        auto rows = [&](NodeId x, int64_t dim, const char* what) { return b_.slice(x, dim, a, e, ps + what); };
        NodeId cos = rows(cos_, 0, "rope_cos"), sin = rows(sin_, 0, "rope_sin");
        MlaSeq s{T, ragged_[i].context, seq_mask_[i], -1, -1, -1, -1, -1, -1, -1};
        s.q_pe = b_.rotary(rows(r.q_pe, 1, "q_pe_rows"), cos, sin, rope, 2, ps + "q_pe");
        if (absorbed) s.q_latent = rows(r.q_latent, 1, "q_latent");
        if (!absorbed) s.q_nope = rows(r.q_nope, 1, "q_nope");
        s.latent = rows(r.latent, 0, "latent");
        s.k_pe = seq_rotary_key(ps, rows(r.pe, 0, "pe_rows"), cos, sin, T);
        parts.push_back(mla_sequence(ps, r, s, kv));
      }
    }
    const int dim = absorbed ? 1 : 0;
    NodeId all = parts.size() == 1 ? parts[0] : b_.call("cat", parts, {{"dim", int64_t{dim}}}, p + "mla_rows");
    if (!absorbed) return all;
    // Each head's value up-projection on every token at once: [H, N, L] x W_uv^T -> [H, N, vd].
    NodeId attn = matmul(all, b_.permute(r.w_uv, {0, 2, 1}, p + "w_uvT"), p + "attn_heads");
    return b_.reshape(b_.permute(attn, {1, 0, 2}, p + "attn_tokens"), {N_, Hl_ * vd}, p + "attn_merged");
  }

  MlaRows mla_rows(const std::string& p, NodeId h) {
    const int64_t nope = m_.qk_nope_head_dim, rope = m_.qk_rope_head_dim, L = m_.kv_lora_rank, qk = nope + rope;
    const int64_t vd = m_.v_head_dim;
    MlaRows r{};
    NodeId q = m_.q_lora_rank > 0
                   ? b_.linear(b_.norm(TransformerShape::RmsNorm, m_.q_lora_rank,
                                       b_.linear(h, p + "q_a_proj", d_, m_.q_lora_rank, false), p + "q_a_norm"),
                               p + "q_b_proj", m_.q_lora_rank, Hl_ * qk, false)
                   : b_.linear(h, p + "q_proj", d_, Hl_ * qk, false);
    NodeId q_all = b_.permute(b_.reshape(q, {N_, Hl_, qk}, p + "q_split"), {1, 0, 2}, p + "q_heads");  // [H, N, qk]
    r.q_nope = b_.slice(q_all, 2, 0, nope, p + "q_nope");
    r.q_pe = b_.slice(q_all, 2, nope, qk, p + "q_pe_raw");
    NodeId kv_a = b_.linear(h, p + "kv_a_proj", d_, L + rope, false);
    r.latent = b_.norm(TransformerShape::RmsNorm, L, b_.slice(kv_a, 1, 0, L, p + "latent_raw"), p + "kv_a_norm");
    r.pe = b_.slice(kv_a, 1, L, L + rope, p + "k_pe_raw");
    // kv_b_proj: per head, nope rows up-projecting the latent to the key, v_head_dim rows to the value.
    r.w_kvb = b_.param(p + "kv_b_proj.weight", {Hl_ * (nope + vd), L});
    r.q_latent = r.w_uv = -1;
    if (absorbed_) {
      NodeId w = b_.reshape(r.w_kvb, {Hl_, nope + vd, L}, p + "kv_b_heads");
      r.w_uv = b_.slice(w, 1, nope, nope + vd, p + "w_uv");                                    // [H, vd, L]
      r.q_latent = matmul(r.q_nope, b_.slice(w, 1, 0, nope, p + "w_uk"), p + "q_latent_all");  // [H, N, L]
    }
    return r;
  }

  // [(B,) T, rope] rotary key of the new tokens from their raw rows (one key every head shares).
  NodeId seq_rotary_key(const std::string& p, NodeId pe_rows, NodeId cos, NodeId sin, int64_t T) {
    const int64_t rope = m_.qk_rope_head_dim;
    NodeId split = b_.reshape(pe_rows, batched({1, T, rope}), p + "k_pe_split");
    return b_.reshape(b_.rotary(split, cos, sin, rope, o_ + 2, p + "k_pe_rope"), batched({T, rope}), p + "k_pe");
  }

  // One sequence's latent attention core: its cache inputs made here, its new latent and rotary
  // key appended to `kv`. Absorbed: the weighted latent [(B,) H, T, L]; naive: [(B *) T, H * vd].
  NodeId mla_sequence(const std::string& p, const MlaRows& r, MlaSeq s, std::vector<NodeId>& kv) {
    kv.push_back(s.latent);
    kv.push_back(s.k_pe);
    if (s.C > 0) {
      s.lat_cache = b_.input(p + "latent_cache", batched({s.C, m_.kv_lora_rank}));
      s.pe_cache = b_.input(p + "rope_cache", batched({s.C, m_.qk_rope_head_dim}));
    }
    return absorbed_ ? mla_absorbed(p, s) : mla_naive(p, r, s);
  }

  // Attention over the cached tokens then the new ones (the mask on the new ones): probs @ values.
  // With a cache, the split softmax of cached_softmax_v (no concatenated scores, so the layer's
  // scores, softmax and weighted sum fuse into one kernel, as in ordinary attention).
  NodeId mla_attend(const std::string& p, const MlaSeq& s, NodeId s_old, NodeId s_new, NodeId v_old, NodeId v_new,
                    const char* new_name) {
    if (s.mask >= 0) s_new = add(s_new, s.mask, p + "masked");
    if (s_old >= 0) return cached_softmax_v(p, s_old, s_new, v_old, v_new);
    return matmul(b_.call("softmax", {s_new}, {{"dim", int64_t{-1}}}, p + "probs"), v_new, p + new_name);
  }

  // Absorbed: the query already through each head's key up-projection (W_uk, MlaRows), scores
  // against the latent itself plus the rotary part; the weighted latent goes out through W_uv
  // (mla). Reads the cache once, expands nothing per cached token.
  NodeId mla_absorbed(const std::string& p, const MlaSeq& s) {
    const int64_t nope = m_.qk_nope_head_dim, rope = m_.qk_rope_head_dim, L = m_.kv_lora_rank;
    const double scale = 1.0 / std::sqrt(static_cast<double>(nope + rope));
    NodeId ql = b_.call("mul", {s.q_latent, b_.scalar(scale)}, {}, p + "q_latent_scaled");
    NodeId qp = b_.call("mul", {s.q_pe, b_.scalar(scale)}, {}, p + "q_pe_scaled");
    auto scores = [&](NodeId lat, NodeId pe, int64_t S, const std::string& what) {
      NodeId a = matmul(ql, transposed(every_head(lat, S, L, p + what + "_latent_h"), p + what + "_latentT"),
                        p + what + "_lat_scores");
      NodeId rp = matmul(qp, transposed(every_head(pe, S, rope, p + what + "_pe_h"), p + what + "_peT"),
                         p + what + "_pe_scores");
      return add(a, rp, p + "scores_" + what);
    };
    NodeId s_old = -1, v_old = -1;
    if (s.lat_cache >= 0) {
      s_old = scores(s.lat_cache, s.pe_cache, s.C, "cache");
      v_old = every_head(s.lat_cache, s.C, L, p + "cache_latent_v");
    }
    NodeId s_new = scores(s.latent, s.k_pe, s.T, "new");
    return mla_attend(p, s, s_old, s_new, v_old, every_head(s.latent, s.T, L, p + "new_latent_v"), "o_latent_new");
  }

  // Naive: every token's keys and values expanded from its latent (kv_b_proj over the cached and
  // the new latents), then ordinary attention with the rotary key shared by the heads.
  NodeId mla_naive(const std::string& p, const MlaRows& r, const MlaSeq& s) {
    const int64_t nope = m_.qk_nope_head_dim, rope = m_.qk_rope_head_dim, L = m_.kv_lora_rank, vd = m_.v_head_dim;
    const int64_t last = o_ + 2;
    const double scale = 1.0 / std::sqrt(static_cast<double>(nope + rope));
    NodeId q = b_.call("mul", {b_.call("cat", {s.q_nope, s.q_pe}, {{"dim", last}}, p + "q"), b_.scalar(scale)}, {},
                       p + "q_scaled");
    NodeId w_t = b_.permute(r.w_kvb, {1, 0}, p + "kv_b_projT");
    // [(B,) S, L] latents -> keys [(B,) H, S, nope + rope] and values [(B,) H, S, vd]
    auto expand = [&](NodeId lat, NodeId pe, int64_t S, const std::string& what) {
      NodeId rows = o_ ? b_.reshape(lat, {B_ * S, L}, p + what + "_latent_rows") : lat;
      NodeId kv = matmul(rows, w_t, p + what + "_kv");  // [(B *) S, H * (nope + vd)]
      NodeId heads = b_.permute(b_.reshape(kv, batched({S, Hl_, nope + vd}), p + what + "_kv_split"),
                                batched_perm({1, 0, 2}), p + what + "_kv_heads");
      NodeId k = b_.call(
          "cat", {b_.slice(heads, last, 0, nope, p + what + "_k_nope"), every_head(pe, S, rope, p + what + "_pe_h")},
          {{"dim", last}}, p + what + "_k");
      return std::pair{k, b_.slice(heads, last, nope, nope + vd, p + what + "_v")};
    };
    auto [k_new, v_new] = expand(s.latent, s.k_pe, s.T, "new");
    NodeId s_old = -1, v_old = -1;
    if (s.lat_cache >= 0) {
      auto [k_old, vo] = expand(s.lat_cache, s.pe_cache, s.C, "cache");
      s_old = matmul(q, transposed(k_old, p + "kT_cache"), p + "scores_cache");
      v_old = vo;
    }
    NodeId attn = mla_attend(p, s, s_old, matmul(q, transposed(k_new, p + "kT_new"), p + "scores_new"), v_old, v_new,
                             "attn_new");
    const int64_t rows = (o_ ? B_ : 1) * s.T;
    return b_.reshape(b_.permute(attn, batched_perm({1, 0, 2}), p + "attn_tokens"), {rows, Hl_ * vd},
                      p + "attn_merged");
  }

  // The dense MLP: [N, d] -> [N, d], `width` wide (this rank's share under tensor parallelism).
  // `reduce`: the row-parallel output summed over the ranks here (false: the caller sums it,
  // with the routed experts' output, in one all_reduce).
  NodeId mlp(const std::string& p, NodeId h2) { return mlp(p, h2, ffn_, true); }
  NodeId mlp(const std::string& p, NodeId h2, int64_t width, bool reduce) {
    auto down = [&](NodeId x, const std::string& name, bool bias) {
      return reduce ? row_parallel(x, name, width, d_, bias) : b_.linear(x, name, width, d_, bias);
    };
    if (m_.gated()) {
      NodeId gate = b_.activation(m_.ffn_kind, b_.linear(h2, p + "gate_proj", d_, width, false), p + "gate_act");
      NodeId up = b_.linear(h2, p + "up_proj", d_, width, false);
      return down(b_.call("mul", {gate, up}, {}, p + "glu"), p + "down_proj", false);
    }
    NodeId up = b_.linear(h2, p + "fc1", d_, width, m_.bias);
    return down(b_.activation(m_.ffn_kind, up, p + "act"), p + "fc2", m_.bias);
  }

  // Which experts each token runs and with what weight: ([N, k] expert ids, [N, k] weights
  // summing to 1). Softmax: top-k of the softmax (Mixtral, Qwen-MoE). Sigmoid (DeepSeek-V3):
  // scores sigmoid(logits); the choice ranks scores + a learned per-expert bias, only among the
  // experts of each token's best group_topk groups (a group's score: the sum of its two best);
  // the weights are the chosen experts' scores, without the bias. Both renormalise over the k.
  std::pair<NodeId, NodeId> route(const std::string& p, NodeId h2) {
    const int64_t E = m_.experts, k = m_.experts_per_token;
    NodeId logits = b_.linear(h2, p + "router", d_, E, false, /*pack=*/false);
    auto topk = [&](NodeId x, int64_t kk, int64_t result, const std::string& name) {
      return b_.call("aten.topk", {x}, {{"k", kk}, {"result", result}}, name);
    };
    NodeId ids, top_w;
    if (m_.router == TransformerShape::Softmax) {
      NodeId probs = b_.call("softmax", {logits}, {{"dim", int64_t{-1}}}, p + "router_probs");
      top_w = topk(probs, k, 0, p + "top_weights");
      ids = topk(probs, k, 1, p + "top_experts");
    } else {
      NodeId scores = b_.call("sigmoid", {logits}, {}, p + "router_scores");
      NodeId choice = b_.call("add", {scores, b_.param(p + "router.selection_bias", {E})}, {}, p + "router_choice");
      if (m_.expert_groups > 0) choice = group_limited(p, choice);
      ids = topk(choice, k, 1, p + "top_experts");
      top_w = b_.call("aten.gather", {scores, ids}, {{"dim", int64_t{1}}}, p + "top_weights");
    }
    NodeId norm = b_.call("sum", {top_w}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, p + "top_sum");
    return {ids, b_.call("div", {top_w, norm}, {}, p + "routing")};
  }

  // [N, E] choice scores with the experts outside each token's best group_topk groups zeroed
  // (as HuggingFace's DeepSeek-V3 masks them; sigmoid scores are positive).
  NodeId group_limited(const std::string& p, NodeId choice) {
    const int64_t E = m_.experts, G = m_.expert_groups, per = E / G;
    NodeId grouped = b_.reshape(choice, {N_, G, per}, p + "router_groups");
    NodeId best2 =
        b_.call("aten.topk", {grouped}, {{"k", std::min<int64_t>(2, per)}, {"result", int64_t{0}}}, p + "group_best");
    NodeId group_score = b_.call("sum", {best2}, {{"dims", std::vector<int64_t>{2}}}, p + "group_scores");
    NodeId kept =
        b_.call("aten.topk", {group_score}, {{"k", m_.group_topk}, {"result", int64_t{0}}}, p + "kept_scores");
    NodeId bar = b_.slice(kept, 1, m_.group_topk - 1, m_.group_topk, p + "group_bar");
    NodeId keep = b_.call("ge", {group_score, bar}, {}, p + "group_kept");
    NodeId keep_e = b_.reshape(b_.call("expand", {b_.reshape(keep, {N_, G, 1}, p + "group_kept3")},
                                       {{"shape", Shape{N_, G, per}}}, p + "group_kept_experts"),
                               {N_, E}, p + "expert_kept");
    return b_.call("where", {keep_e, choice, b_.scalar(0.0)}, {}, p + "router_choice_kept");
  }

  // Mixture of experts, as the HuggingFace MoE graphs spell it (Mixtral's batched_mm experts,
  // tests/fixtures/hf): route() picks k experts per token; each (token, expert) pair gathers its
  // expert's weights (aten.index of the weight: streamed straight from it, sxe.gemm_gather) and
  // multiplies its row by them; the k results are summed with the routing weights, plus the
  // shared experts' MLP. Experts carry no biases (as Mixtral, Qwen-MoE and DeepSeek).
  NodeId moe(const std::string& p, NodeId h2) {
    const int64_t k = m_.experts_per_token, R = N_ * k;
    auto [top_i, weights] = route(p, h2);
    NodeId routed;
    if (ep_) {
      routed = experts_on_this_device(p, h2, top_i, weights);
    } else {
      NodeId ids = b_.reshape(top_i, {R}, p + "expert_ids");
      NodeId rows = b_.reshape(
          b_.call("expand", {b_.reshape(h2, {N_, 1, d_}, p + "moe_in")}, {{"shape", Shape{N_, k, d_}}}, p + "moe_rows"),
          {R, 1, d_}, p + "moe_x");
      NodeId y = expert_mlp(p, rows, ids, m_.experts, m_.expert_ffn() / tp_);
      NodeId weighted = b_.call(
          "mul", {b_.reshape(y, {N_, k, d_}, p + "expert_out"), b_.reshape(weights, {N_, k, 1}, p + "routing_w")}, {},
          p + "expert_weighted");
      routed = b_.call("sum", {weighted}, {{"dims", std::vector<int64_t>{1}}}, p + "moe");
    }
    NodeId out = routed;
    if (m_.shared_experts > 0)
      out = b_.call("add", {out, mlp(p + "shared_expert.", h2, m_.shared_experts * m_.expert_ffn() / tp_, false)}, {},
                    p + "moe_shared");
    // Under tensor parallelism each expert's FFN columns are split like the dense MLP's, under
    // expert parallelism the experts themselves: either way each rank holds a partial sum of
    // the routed output (and of the shared experts'), summed over the ranks in one all_reduce.
    return tp_ == 1 ? out : all_reduce(out, p + "moe");
  }

  // The experts' MLP on `rows` ([R, 1, d]), row i through expert ids[i] of `E` (its weights
  // gathered per row: aten.index of the weight, streamed straight from it by sxe.gemm_gather),
  // `F` wide -> [R, 1, d]. ids < 0: `rows` is [E, S, d], expert e's S rows through expert e.
  NodeId expert_mlp(const std::string& p, NodeId rows, NodeId ids, int64_t E, int64_t F) {
    // [R, 1, in] x (expert weights [E, out, in] gathered per row)^T -> [R, 1, out]
    auto expert = [&](NodeId x, const std::string& name, int64_t in, int64_t out) {
      NodeId w = b_.param(p + "experts." + name + ".weight", {E, out, in});
      b_.packed(w);
      NodeId wg = ids < 0 ? w : b_.call("aten.index", {w, ids}, {}, p + name + "_gathered");
      return b_.call("matmul", {x, b_.permute(wg, {0, 2, 1}, p + name + "_gT")}, {}, p + name);
    };
    if (m_.gated()) {
      NodeId gate = b_.activation(m_.ffn_kind, expert(rows, "gate_proj", d_, F), p + "expert_gate_act");
      NodeId up = expert(rows, "up_proj", d_, F);
      return expert(b_.call("mul", {gate, up}, {}, p + "expert_glu"), "down_proj", F, d_);
    }
    NodeId up = expert(rows, "fc1", d_, F);
    return expert(b_.activation(m_.ffn_kind, up, p + "expert_act"), "fc2", F, d_);
  }

  // Expert parallelism: this rank holds experts [r*El, (r+1)*El) whole. Every rank routes
  // every token (the activations are replicated, so no token crosses the ESL to be dispatched;
  // the combine is the all_reduce the layer ends with), runs the routed rows whose expert it
  // holds and adds their weighted outputs into their tokens -> [N, d], this rank's partial sum.
  // Static shapes need a capacity; rows past it are dropped (GShard's semantics). Two forms,
  // the one streaming fewer expert slabs taken (expert_dispatch(); ties: rows):
  //   rows     the first `cap` rows (in row order) whose expert is here, each streaming its
  //            expert's weights (sxe.gemm_gather): cap slabs, few when few tokens route here;
  //   experts  per local expert the first `cap_e` rows routed to it, each expert's weights
  //            streamed once for all of them (a batched matmul): El slabs, the union.
  // The bookkeeping is one-hot matmuls in f32 (exact: every sum has one nonzero term), so it
  // all runs on the LPU:
  //   hit[e, m]  row m routes to local expert e       earlier[m', m] = m' < m (from an iota)
  //   slot = hit x earlier: rows before m routed alike      take[s, m] = hit and slot == s
  //   (expert, weight)[s] = take x (local id, weight)[m]    token one-hot [s, t] = sum_k take
  NodeId experts_on_this_device(const std::string& p, NodeId h2, NodeId top_i, NodeId weights) {
    const int64_t k = m_.experts_per_token, M = N_ * k, El = m_.experts / tp_;
    const ExpertDispatch form = expert_dispatch(m_, w_);
    auto f32 = [&](NodeId x, const std::string& name) {
      return b_.call("to_dtype", {x}, {{"dtype", std::string(dtype_name(DType::f32))}}, name);
    };
    auto as = [&](NodeId x, DType t, const std::string& name) {
      return b_.call("to_dtype", {x}, {{"dtype", std::string(dtype_name(t))}}, name);
    };
    auto c32 = [&](double v) {
      return b_.call("full", {}, {{"value", v}, {"dtype", std::string(dtype_name(DType::f32))}}, "c");
    };
    auto one_if = [&](NodeId cond, NodeId then, const std::string& name) {
      return b_.call("where", {cond, then, c32(0)}, {}, name);
    };
    const int64_t W = std::max(M, El);
    NodeId iota =
        b_.call("aten.arange", {}, {{"end", W}, {"dtype", std::string(dtype_name(DType::f32))}}, strcat("ep_iota_", W));
    auto iota_to = [&](int64_t n, Shape s, const std::string& name) {
      return b_.reshape(n == W ? iota : b_.slice(iota, 0, 0, n, name + "_flat"), std::move(s), name);
    };
    // This rank's first expert: shaped [1] so that no rank's value merges with an equal scalar
    // constant (the ranks' graphs must stay node for node alike: run_reference_ranks).
    NodeId first = b_.call("full", {},
                           {{"value", static_cast<double>(rank_ * El)},
                            {"shape", Shape{1}},
                            {"dtype", std::string(dtype_name(DType::f32))}},
                           "ep_first_expert");
    NodeId local = b_.call("sub", {f32(b_.reshape(top_i, {1, M}, p + "ep_ids"), p + "ep_ids_f"), first}, {},
                           p + "ep_local");  // [1, M]: row m's expert, counted from this rank's first
    NodeId earlier =
        one_if(b_.call("lt", {iota_to(M, {M, 1}, p + "ep_iota_col"), iota_to(M, {1, M}, p + "ep_iota_row")}, {},
                       p + "ep_before"),
               c32(1), p + "ep_earlier");  // [M, M]
    // hit: [G, M] (G = 1 for rows: any local expert; El for experts: each); S slots per group.
    const bool rows = form.form == ExpertDispatch::Rows;
    const int64_t G = rows ? 1 : El, S = form.slots, GS = G * S;
    NodeId hit =
        rows ? one_if(b_.call("lt", {local, c32(El)}, {}, p + "ep_below"),
                      one_if(b_.call("ge", {local, c32(0)}, {}, p + "ep_above"), c32(1), p + "ep_nonneg"), p + "ep_hit")
             : one_if(b_.call("eq", {local, iota_to(El, {El, 1}, p + "ep_experts")}, {}, p + "ep_is"), c32(1),
                      p + "ep_hit");
    NodeId slot = b_.call("matmul", {hit, earlier}, {}, p + "ep_slot");  // [G, M]
    NodeId take = b_.reshape(
        one_if(b_.call("eq", {b_.reshape(slot, {G, 1, M}, p + "ep_slot3"), iota_to(S, {1, S, 1}, p + "ep_slots")}, {},
                       p + "ep_at"),
               b_.reshape(hit, {G, 1, M}, p + "ep_hit3"), p + "ep_take3"),
        {GS, M}, p + "ep_take");  // [G*S, M]
    NodeId w_col = f32(b_.reshape(weights, {M, 1}, p + "ep_w_col"), p + "ep_w_f");
    NodeId info = rows ? b_.call("cat", {b_.reshape(local, {M, 1}, p + "ep_local_col"), w_col}, {{"dim", int64_t{1}}},
                                 p + "ep_row_info")
                       : w_col;
    NodeId picked = b_.call("matmul", {take, info}, {}, p + "ep_picked");  // [G*S, 2 or 1]
    NodeId w = as(b_.slice(picked, 1, rows ? 1 : 0, rows ? 2 : 1, p + "ep_w_sel"), b_.dtype(), p + "ep_routing_w");
    NodeId token = as(b_.call("sum", {b_.reshape(take, {GS, N_, k}, p + "ep_take_tok")},
                              {{"dims", std::vector<int64_t>{2}}}, p + "ep_token_f"),
                      b_.dtype(), p + "ep_token");              // [G*S, N]
    NodeId x = b_.call("matmul", {token, h2}, {}, p + "ep_x");  // [G*S, d]
    NodeId y;
    if (rows) {
      NodeId ids = as(b_.reshape(b_.slice(picked, 1, 0, 1, p + "ep_id_col"), {S}, p + "ep_id_f"), DType::i64,
                      p + "ep_expert_ids");
      y = expert_mlp(p, b_.reshape(x, {S, 1, d_}, p + "ep_rows"), ids, El, m_.expert_ffn());
    } else {
      y = expert_mlp(p, b_.reshape(x, {El, S, d_}, p + "ep_rows"), -1, El, m_.expert_ffn());
    }
    NodeId weighted = b_.call("mul", {b_.reshape(y, {GS, d_}, p + "ep_out"), w}, {}, p + "ep_weighted");
    return b_.call("matmul", {b_.permute(token, {1, 0}, p + "ep_combine"), weighted}, {}, p + "moe");
  }

  Builder b_;
  const TransformerShape& m_;
  const int64_t B_, T_, C_, N_, d_, hd_, G_, o_;
  const int64_t tp_, rank_, Hl_, Hkvl_, ffn_, vocab_;  // tensor parallelism: this rank's share
  // Expert parallelism (moe_parallel: expert, devices > 1).
  const bool ep_;
  const WorkloadSpec& w_;
  NodeId cos_ = -1, sin_ = -1, mask_ = -1, alibi_ = -1;
  const std::vector<WorkloadSpec::RaggedSeq>& ragged_;  // a ragged step's sequences (empty: lockstep)
  // The absorbed latent-attention form (mla_form, auto resolved for this step by choose_mla_form).
  bool absorbed_ = true;
  std::vector<int64_t> seq_end_;  // each sequence's row past its last
  std::vector<NodeId> seq_mask_, seq_alibi_;
};

}  // namespace

void check_tensor_parallel(const TransformerShape& m, const WorkloadSpec& w) {
  // The workload's file too, when it has one: the keys named below are in it (or the preset's).
  const std::string where = w.file.empty() ? strcat("workload ", w.name) : strcat(w.file, " (workload ", w.name, ")");
  if (w.tp < 1 || w.tp_rank < 0 || w.tp_rank >= w.tp)
    throw InternalError(strcat("workload ", w.name, ": rank ", w.tp_rank, " of ", w.tp, " devices"));
  if (w.tp > m.vocab)
    throw InputError(strcat(where, ": devices = ", w.tp, " is more than ", m.name, "'s vocab = ", m.vocab,
                            " (the LM head is split by vocabulary)"));
  const bool ep = m.experts > 0 && w.moe_parallel == WorkloadSpec::MoeParallel::Expert;
  if (ep && m.experts % w.tp != 0)
    throw InputError(strcat(where, ": moe_parallel: expert over devices = ", w.tp, " needs ", m.name, "'s experts (",
                            m.experts, ") to be a multiple of ", w.tp,
                            " (each device holds experts / devices whole experts; moe_parallel: tensor splits their "
                            "columns instead)"));
  // Under expert parallelism only the shared experts' columns are split.
  const int64_t moe_cols = m.experts == 0 ? 0 : ep ? m.shared_experts * m.expert_ffn() : m.expert_ffn();
  for (auto [key, v] : {std::pair<const char*, int64_t>{"heads", m.heads},
                        {"kv_heads", m.kv_heads},
                        {"ffn", m.ffn},
                        {ep ? "shared_experts x moe_ffn" : "moe_ffn", moe_cols}})
    if (v % w.tp != 0)
      throw InputError(
          strcat(where, ": tensor parallelism over devices = ", w.tp, " needs ", m.name, "'s ", key, " (", v,
                 ") to be a multiple of ", w.tp,
                 " (devices must divide heads, kv_heads, ffn and moe_ffn; the vocabulary may split unevenly)"));
}

namespace {
int64_t capacity(double factor, int64_t rows, int64_t share) {
  const double want = std::ceil(factor * static_cast<double>(rows) / static_cast<double>(share));
  return std::clamp<int64_t>(std::isfinite(want) && want < 1e15 ? static_cast<int64_t>(want) : rows, 1, rows);
}
}  // namespace

ExpertDispatch expert_dispatch(const TransformerShape& m, const WorkloadSpec& w) {
  const int64_t M = w.tokens() * m.experts_per_token, El = m.experts / std::max<int64_t>(w.tp, 1);
  ExpertDispatch rows{ExpertDispatch::Rows, capacity(w.expert_capacity, M, w.tp)};
  ExpertDispatch experts{ExpertDispatch::Experts, capacity(w.expert_capacity, M, m.experts)};
  return El < rows.slots ? experts : rows;
}

std::string describe_expert_dispatch(const TransformerShape& m, const WorkloadSpec& w) {
  if (m.experts == 0 || w.tp < 2 || w.moe_parallel != WorkloadSpec::MoeParallel::Expert) return "";
  const ExpertDispatch d = expert_dispatch(m, w);
  const int64_t M = w.tokens() * m.experts_per_token, El = m.experts / w.tp;
  return strcat(
      "expert parallelism: ", El, " experts a device, ", M, " routed rows a layer, expert_capacity ", w.expert_capacity,
      " -> ",
      d.form == ExpertDispatch::Rows
          ? strcat("rows: the first ", d.slots, " rows routed here, each streaming its expert (", d.slots,
                   " slabs <= ", El, " experts)")
          : strcat("experts: up to ", d.slots, " rows per expert, each of the ", El, " experts streamed once (", El,
                   " slabs < ", capacity(w.expert_capacity, M, w.tp), " rows)"),
      "\n");
}

namespace {
void check_ragged(const WorkloadSpec& w) {
  if (w.batch != 1) throw InternalError(strcat("workload ", w.name, ": a ragged step with batch ", w.batch));
  if (static_cast<int64_t>(w.ragged.size()) > kMaxDecoderBatch)
    throw InputError(strcat("workload ", w.name, ": a ragged step of ", w.ragged.size(), " sequences (at most ",
                            kMaxDecoderBatch, ")"));
  for (size_t i = 0; i < w.ragged.size(); ++i)
    if (w.ragged[i].tokens < 1 || w.ragged[i].context < 0)
      throw InternalError(strcat("workload ", w.name, ": ragged sequence ", i, " has ", w.ragged[i].tokens,
                                 " tokens on ", w.ragged[i].context, " cached"));
}
}  // namespace

Graph build_transformer(const TransformerShape& m, const WorkloadSpec& w) {
  if (!w.ragged.empty()) check_ragged(w);
  if (w.ragged.empty() && w.phase == "prefill" && w.seq_len > 1 && w.context > 0)
    throw InputError(strcat("workload ", w.name, ": prefill with a cached prefix (context > 0) is not supported"));
  if (w.batch < 1 || w.batch > kMaxDecoderBatch)
    throw InputError(strcat("workload ", w.name, ": batch ", w.batch, " is outside 1..", kMaxDecoderBatch));
  check_tensor_parallel(m, w);
  Graph g(w.name);
  DecoderBuilder b(g, m, w);
  const int64_t layers = w.layers > 0 ? std::min(w.layers, m.layers) : m.layers;
  NodeId x = b.inputs();
  std::vector<NodeId> outputs = {-1};  // the logits first, then each layer's new keys and values
  for (int64_t l = 0; l < layers; ++l) x = b.layer(l, x, outputs);
  outputs[0] = b.head(x);
  g.set_output(outputs);
  return g;
}

}  // namespace lpu
