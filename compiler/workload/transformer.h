// Decoder-only transformers described by keys (docs/workloads.md): one TransformerShape holds
// every fact about a model's shape and parts; the named models (OPT, LLaMA-2, GPT-2, the tiny
// test models) are presets of it, and a workload file may name a preset and override keys or
// describe a new model (`model: decoder`). build_transformer generates the graph of one
// forward step directly in C++:
//   decode:  seq_len new tokens (usually 1) per sequence attend to `context` cached tokens; the
//            KV cache of every layer is a graph input read once, and the new keys/values are
//            graph outputs (the cache append).
//   prefill: seq_len tokens with a causal mask (context 0, or a cached prefix).
// `batch` sequences step together: every linear layer multiplies [batch * seq_len, in] rows
// by its weight (read once, reused by every row), and each sequence has its own KV-cache
// slice (a leading batch dim on the attention tensors). At batch 1 there is no batch dim.
// The step starts from the token embeddings (hidden states [tokens, d_model], learned position
// embeddings already added) and ends with the LM head on each sequence's last token. Shapes
// follow ../shared/reference/lpu-architecture.md.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

struct WorkloadSpec;

struct TransformerShape;
// The input widths of the linear weights a decoder stores packed (weight_dtype), each with
// what it is ("d_model", "ffn", ...): a group size must divide every one. Before tensor
// parallelism (the builder checks each rank's share too).
std::vector<std::pair<std::string, int64_t>> packed_input_widths(const TransformerShape& m);

struct TransformerShape {
  std::string name;
  int64_t layers, d_model, heads, kv_heads, ffn, vocab;
  enum Norm { LayerNorm, RmsNorm } norm;
  // The MLP: act(x W1) W2, or the gated act(x Wgate) * (x Wup) Wdown (SwiGLU: silu, GeGLU: gelu).
  enum Ffn { Relu, Gelu, SwiGlu, GeGlu } ffn_kind;
  // Learned: position embeddings added to the token embeddings before the step (nothing in
  // the step graph; its table counts in parameters()); Rotary: cos/sin tables per step (graph
  // inputs); Alibi: a per-head linear bias added to the attention scores (a graph input
  // [heads, seq_len, context + seq_len], as the causal mask).
  enum Positions { Learned, Rotary, Alibi } positions;
  bool bias;
  // Longest sequence (prompt + generated tokens) the model is trained for: HuggingFace's
  // max_position_embeddings / n_positions. `lpu generate` refuses longer ones.
  int64_t max_position;
  int64_t head_dim = 0;          // 0: d_model / heads
  bool tied_embeddings = false;  // the LM head is the embedding table (counted once)
  // Mixture of experts: each layer's MLP is `experts` expert MLPs (ffn wide) behind a router;
  // each token runs its top `experts_per_token` (0: a dense MLP).
  int64_t experts = 0, experts_per_token = 0;
  // The rest of a mixture of experts (docs/workloads.md, "Mixture of experts"): each expert's FFN
  // width (0: ffn); always-on shared experts (DeepSeek's: one MLP shared_experts * moe_ffn wide
  // that every token runs); the router's score function (softmax, or sigmoid with a per-expert
  // selection bias as DeepSeek-V3 routes); group-limited routing (the experts in expert_groups
  // groups, a token choosing among the experts of its best group_topk groups; 0: no groups);
  // and how many leading layers keep a dense MLP (ffn wide).
  enum Router { Softmax, Sigmoid };
  int64_t moe_ffn = 0, shared_experts = 0;
  Router router = Softmax;
  int64_t expert_groups = 0, group_topk = 0, first_dense_layers = 0;

  // Multi-head latent attention (DeepSeek-V2/V3, docs/workloads.md "Multi-head latent
  // attention"): each token's keys and values come from a latent of kv_lora_rank (what the cache
  // holds, with one rotary key of qk_rope_head_dim that every head shares); queries go through a
  // q_lora_rank bottleneck (0: a plain projection); a head's query/key is qk_nope_head_dim +
  // qk_rope_head_dim wide, its value v_head_dim. mla_form: how a step computes it (absorbed: the
  // key/value up-projections folded into the query and the output, attention over the latent;
  // naive: keys and values expanded from the latent for every cached token; auto: the one
  // choose_mla_form() prices lower for the step).
  enum Attention { Mha, Mla };
  enum MlaForm { Absorbed, Naive, Auto };
  Attention attention = Mha;
  int64_t kv_lora_rank = 0, q_lora_rank = 0, qk_rope_head_dim = 0, qk_nope_head_dim = 0, v_head_dim = 0;
  MlaForm mla_form = Auto;

  int64_t expert_ffn() const { return moe_ffn > 0 ? moe_ffn : ffn; }
  bool mla() const { return attention == Mla; }
  // Width of the rotary tables (rope_cos/rope_sin): the head, or MLA's rotary part.
  int64_t rope_dim() const { return mla() ? qk_rope_head_dim : hd(); }
  // KV-cache elements per token and layer on one of `devices` tensor-parallel devices: K and V
  // of this device's KV heads, or MLA's latent and rotary key (every device holds them whole).
  int64_t kv_cache_width(int64_t devices) const {
    return mla() ? kv_lora_rank + qk_rope_head_dim : 2 * (kv_heads / devices) * hd();
  }
  bool moe_layer(int64_t l) const { return experts > 0 && l >= first_dense_layers; }

  int64_t hd() const { return head_dim > 0 ? head_dim : d_model / heads; }
  bool gated() const { return ffn_kind == SwiGlu || ffn_kind == GeGlu; }
  // Weights of the whole model, the embedding table (and learned positions) included.
  int64_t parameters() const;
};

// The names of the enum values as the workload keys spell them (norm, mlp, positions, router).
const char* norm_name(TransformerShape::Norm n);
const char* mlp_name(TransformerShape::Ffn f);
const char* positions_name(TransformerShape::Positions p);
const char* router_name(TransformerShape::Router r);
const char* attention_name(TransformerShape::Attention a);
const char* mla_form_name(TransformerShape::MlaForm f);
bool parse_norm(const std::string& s, TransformerShape::Norm& out);
bool parse_mlp(const std::string& s, TransformerShape::Ffn& out);
bool parse_positions(const std::string& s, TransformerShape::Positions& out);
bool parse_router(const std::string& s, TransformerShape::Router& out);
bool parse_attention(const std::string& s, TransformerShape::Attention& out);
bool parse_mla_form(const std::string& s, TransformerShape::MlaForm& out);

// mla_form auto: the form whose attention core does fewer MACs in this step. That is the one
// cost the two forms differ in: both read the same latent cache and kv_b_proj, and the
// projections outside the core are the same. Per layer, all heads, summed over the step's
// sequences (C cached and T new tokens each; L kv_lora_rank, n nope, r rope, v v_head_dim):
//   absorbed  T*n*L (q x W_uk) + T*(C+T)*(L+r) (scores) + T*(C+T)*L (weighted latent) + T*L*v (x W_uv)
//   naive     (C+T)*L*(n+v) (keys and values expanded) + T*(C+T)*(n+r) (scores) + T*(C+T)*v
// so absorbed wins when C*L*(n+v) > T*(C+T)*(2L+r-n-v) roughly: decode (T = 1) always, a
// prefill without a cache (C = 0) never. A form the workload names is kept as it is.
struct WorkloadSpec;
struct MlaChoice {
  TransformerShape::MlaForm form = TransformerShape::Absorbed;
  double absorbed_macs = 0, naive_macs = 0;  // of the attention core, per layer
};
MlaChoice choose_mla_form(const TransformerShape& m, const WorkloadSpec& w);
// One line for `lpu compile --emit schedule`: the form a step of `w` uses and why ("" without MLA).
std::string describe_mla_choice(const TransformerShape& m, const WorkloadSpec& w);

// The shape as workload keys, in the order the workload file takes them:
// {{"layers", "24"}, {"d_model", "2048"}, ..., {"max_position", "2048"}}.
std::vector<std::pair<std::string, std::string>> decoder_keys(const TransformerShape& m);
// "layers=24 d_model=2048 ...": decoder_keys on one line.
std::string describe_decoder(const TransformerShape& m);

const std::vector<TransformerShape>& transformer_shapes();  // the presets
const TransformerShape* find_transformer(const std::string& name);
// The model's graph for one step of workload `w` (phase, batch, seq_len, context, layers,
// dtype); InputError for combinations the builder does not generate.
// w.tp > 1: the graph of rank w.tp_rank (docs/tensor-parallel.md): Q/K/V and up/gate column-
// parallel (this rank's heads, by KV groups, and FFN columns), the output and down projections
// row-parallel with an all_reduce after them (their bias added after it), the LM head split by
// vocabulary ((r+1)*V/N - r*V/N rows each) and all_gather'ed.
Graph build_transformer(const TransformerShape& m, const WorkloadSpec& w);
// InputError naming the key when w.tp does not divide heads, kv_heads or ffn (or, under
// expert parallelism, experts).
void check_tensor_parallel(const TransformerShape& m, const WorkloadSpec& w);
// Expert parallelism (moe_parallel: expert; docs/tensor-parallel.md): how a device runs the
// routed rows whose expert it holds, for M = tokens x experts_per_token rows, E experts over
// D devices (El = E / D each), factor f = expert_capacity; rows past a capacity are dropped:
//   Rows     slots = ceil(f M / D) rows in all, each streaming its expert (sxe.gemm_gather);
//   Experts  slots = ceil(f M / E) rows per local expert, each expert streamed once (batched).
// The form streaming fewer expert slabs (slots vs El), Rows on a tie. Slots are clamped to
// [1, M].
struct ExpertDispatch {
  enum Form { Rows, Experts } form = Rows;
  int64_t slots = 1;
};
ExpertDispatch expert_dispatch(const TransformerShape& m, const WorkloadSpec& w);
// One line for `lpu compile --emit schedule` ("" unless expert parallelism applies).
std::string describe_expert_dispatch(const TransformerShape& m, const WorkloadSpec& w);

}  // namespace lpu
