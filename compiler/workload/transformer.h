// Built-in decoder-only transformer builders (OPT, LLaMA-2, GPT-2 and a tiny test model),
// generating the graph of one forward step directly in C++.
//   decode:  seq_len new tokens (usually 1) attend to `context` cached tokens; the KV cache of
//            every layer is a graph input read once, and the new keys/values are graph
//            outputs (the cache append).
//   prefill: seq_len tokens with a causal mask (context 0, or a cached prefix).
// The step starts from the token embeddings (hidden states [tokens, d_model]) and ends with
// the LM head on the last token. Shapes follow ../shared/reference/lpu-architecture.md.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

struct WorkloadSpec;

struct TransformerShape {
  std::string name;
  int64_t layers, d_model, heads, kv_heads, ffn, vocab;
  enum Norm { LayerNorm, RmsNorm } norm;
  enum Ffn { Relu, Gelu, SwiGlu } ffn_kind;
  bool rotary;
  bool bias;
  // Longest sequence (prompt + generated tokens) the model is trained for: HuggingFace's
  // max_position_embeddings / n_positions. `lpu generate` refuses longer ones.
  int64_t max_position;
};

const std::vector<TransformerShape>& transformer_shapes();
const TransformerShape* find_transformer(const std::string& name);
// w.tp > 1: the graph of rank w.tp_rank (docs/tensor-parallel.md): Q/K/V and up/gate column-
// parallel (this rank's heads, by KV groups, and FFN columns), the output and down projections
// row-parallel with an all_reduce after them (their bias added after it), the LM head split by
// vocabulary ((r+1)*V/N - r*V/N rows each) and all_gather'ed.
Graph build_transformer(const TransformerShape& m, const WorkloadSpec& w);
// InputError naming the key when w.tp does not divide heads, kv_heads or ffn.
void check_tensor_parallel(const TransformerShape& m, const WorkloadSpec& w);

}  // namespace lpu
