// Decoders described by workload keys (issue 15, items 4 and 5; docs/workloads.md): the presets
// build exactly the graphs the coded models built, every key takes effect, every bad value is
// an InputError naming file, line and key, and batched steps compute what batch-1 steps do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph/graph.h"
#include "jobs/jobs.h"
#include "legacy_transformer.h"
#include "passes/passes.h"
#include "ref/reference.h"
#include "support/error.h"
#include "test_util.h"
#include "workload/workload.h"

using namespace lpu;
using ::testing::HasSubstr;

namespace {

// A workload file with `text` in a fresh directory; returns its path.
std::string yaml_file(const std::string& stem, const std::string& text) {
  // One directory per process: ctest runs every test of this file as its own process, in
  // parallel, and two of them writing the same w.yaml read each other's text.
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lpu_workload_keys_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path p = dir / (stem + ".yaml");
  std::ofstream(p) << text;
  return p.string();
}

WorkloadSpec load(const std::string& text) { return load_workload_file(yaml_file("w", text)); }

// The InputError message loading `text` gives ("" when it loads).
std::string load_error(const std::string& text) {
  try {
    load_workload_file(yaml_file("bad", text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has_node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return true;
  return false;
}
bool has_op(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n.op == op) return true;
  return false;
}
Shape shape_of(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.type.shape;
  ADD_FAILURE() << "no node " << name;
  return {};
}

}  // namespace

// Every preset builds, node for node, the graph its coded model built (the frozen builder in
// legacy_transformer.h), in decode and prefill, with and without a KV cache; through a spec
// built in code and through the name (which sets the resolved `decoder`).
TEST(WorkloadKeys, PresetsBuildTheGraphsTheCodedModelsBuilt) {
  struct Case {
    const char* phase;
    int64_t seq, ctx;
  };
  size_t dense = 0;  // the presets that existed as coded models (the mixtures came later)
  for (const auto& m : transformer_shapes()) dense += m.experts == 0;
  ASSERT_EQ(legacy::legacy_shapes().size(), dense);
  for (const auto& old : legacy::legacy_shapes())
    for (const Case& c : {Case{"decode", 1, 0}, Case{"decode", 1, 7}, Case{"prefill", 5, 0}, Case{"decode", 3, 4}}) {
      WorkloadSpec w = resolve_workload(old.name);
      w.phase = c.phase;
      w.seq_len = c.seq;
      w.context = c.ctx;
      w.layers = old.name.rfind("tiny", 0) == 0 ? -1 : 2;  // the big ones: two layers (each layer alike)
      std::string want = print_graph(legacy::build_legacy(old, w));
      EXPECT_EQ(print_graph(build_graph(w)), want) << old.name << " " << c.phase << " ctx " << c.ctx;
      w.decoder.reset();  // the preset through the builder table
      EXPECT_EQ(print_graph(build_graph(w)), want) << old.name;
    }
}

// `lpu list workloads` prints the preset's keys, and parameters() counts HuggingFace's totals.
TEST(WorkloadKeys, PresetsDescribeTheirKeysAndParameterCounts) {
  const ModelBuilder* b = find_model_builder("llama2-70b");
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(b->description, HasSubstr("layers=80 d_model=8192 heads=64 kv_heads=8 head_dim=128 ffn=28672 vocab=32000 "
                                        "norm=rmsnorm mlp=swiglu positions=rotary bias=false tied_embeddings=false "
                                        "max_position=4096"));
  // HuggingFace: LLaMA-2-7B 6,738,415,616 weights; OPT-1.3B 1,315,758,080 (its position table
  // has 2 rows more than max_position: 2 x 2048 fewer here); GPT-2 124,439,808.
  EXPECT_EQ(find_transformer("llama2-7b")->parameters(), 6738415616);
  // Mixtral-8x7B 46,702,792,704 as HuggingFace counts; Qwen3-30B-A3B 30,532,122,624 less its
  // per-head q/k norms (48 layers x 2 x 128), which the preset does not model.
  EXPECT_EQ(find_transformer("mixtral-8x7b")->parameters(), 46702792704);
  EXPECT_EQ(find_transformer("qwen3-30b-a3b")->parameters(), 30532122624 - 48 * 2 * 128);
  EXPECT_EQ(find_transformer("opt-1.3b")->parameters(), 1315758080 - 2 * 2048);
  EXPECT_EQ(find_transformer("gpt2")->parameters(), 124439808);
}

TEST(WorkloadKeys, APresetTakesOverrides) {
  WorkloadSpec w = load("model: llama2-7b\nd_model: 2560\nheads: 20\nlayers: 3\nffn: 6912\nvocab: 50000\n");
  ASSERT_TRUE(w.decoder.has_value());
  EXPECT_EQ(w.decoder->d_model, 2560);
  EXPECT_EQ(w.decoder->heads, 20);
  EXPECT_EQ(w.decoder->kv_heads, 20);  // an MHA preset stays MHA
  EXPECT_EQ(w.decoder->hd(), 128);
  EXPECT_EQ(w.decoder->layers, 3);
  EXPECT_EQ(w.decoder->norm, TransformerShape::RmsNorm);  // not overridden: the preset's
  EXPECT_EQ(w.decoder->name, "w");                        // no longer llama2-7b
  Graph g = build_graph(w);
  EXPECT_EQ(shape_of(g, "l2.gate_proj.weight"), (Shape{6912, 2560}));
  EXPECT_EQ(shape_of(g, "lm_head.weight"), (Shape{50000, 2560}));
  EXPECT_FALSE(has_node(g, "l3.attn_norm.weight"));
  EXPECT_EQ(decoder_of(w), &*w.decoder);
}

TEST(WorkloadKeys, ANewModelFromItsKeys) {
  WorkloadSpec w = load(
      "model: decoder\nname: mine\nlayers: 2\nd_model: 96\nheads: 4\nkv_heads: 2\nhead_dim: 32\nffn: 160\n"
      "vocab: 100\nnorm: layernorm\nmlp: geglu\npositions: alibi\nbias: true\ntied_embeddings: true\n"
      "max_position: 512\n");
  ASSERT_TRUE(w.decoder.has_value());
  const TransformerShape& m = *w.decoder;
  EXPECT_EQ(m.name, "mine");
  EXPECT_EQ(m.hd(), 32);
  EXPECT_EQ(m.max_position, 512);
  EXPECT_TRUE(m.tied_embeddings);
  Graph g = build_graph(w);
  EXPECT_EQ(shape_of(g, "l0.q_proj.weight"), (Shape{128, 96}));  // heads * head_dim != d_model
  EXPECT_EQ(shape_of(g, "l0.k_proj.weight"), (Shape{64, 96}));
  EXPECT_EQ(shape_of(g, "l0.o_proj.weight"), (Shape{96, 128}));
  EXPECT_TRUE(has_node(g, "l0.q_proj.bias"));
  EXPECT_TRUE(has_node(g, "l0.attn_norm.bias"));  // layernorm
  EXPECT_TRUE(has_node(g, "l1.gate_act"));        // gated
  EXPECT_TRUE(has_op(g, "gelu"));
  EXPECT_TRUE(has_node(g, "alibi"));
  EXPECT_FALSE(has_node(g, "rope_cos"));
  // A new model's parts default to LLaMA's.
  WorkloadSpec d = load("model: decoder\nlayers: 1\nd_model: 64\nheads: 4\nffn: 96\nvocab: 50\n");
  EXPECT_EQ(d.decoder->norm, TransformerShape::RmsNorm);
  EXPECT_EQ(d.decoder->ffn_kind, TransformerShape::SwiGlu);
  EXPECT_EQ(d.decoder->positions, TransformerShape::Rotary);
  EXPECT_EQ(d.decoder->kv_heads, 4);
  EXPECT_TRUE(has_node(build_graph(d), "rope_cos"));
}

// Each key changes what it says, one at a time on tiny-opt.
TEST(WorkloadKeys, EachKeyTakesEffect) {
  auto graph = [](const std::string& keys) { return build_graph(load("model: tiny-opt\n" + keys)); };
  EXPECT_TRUE(has_op(graph("norm: rmsnorm\n"), "rms_norm"));
  EXPECT_FALSE(has_op(graph("norm: rmsnorm\n"), "layer_norm"));
  EXPECT_TRUE(has_op(graph("mlp: gelu\n"), "gelu"));
  EXPECT_TRUE(has_node(graph("mlp: swiglu\n"), "l0.glu"));
  EXPECT_TRUE(has_op(graph("mlp: swiglu\n"), "silu"));
  EXPECT_TRUE(has_node(graph("mlp: geglu\n"), "l0.glu"));
  EXPECT_TRUE(has_node(graph("positions: rotary\n"), "rope_sin"));
  EXPECT_TRUE(has_node(graph("positions: alibi\n"), "l1.alibi_scores"));
  EXPECT_FALSE(has_node(graph("bias: false\n"), "l0.fc1.bias"));
  EXPECT_EQ(shape_of(graph("kv_heads: 1\n"), "l0.v_proj.weight"), (Shape{16, 64}));
  EXPECT_EQ(shape_of(graph("head_dim: 8\n"), "l0.q_proj.weight"), (Shape{32, 64}));
  EXPECT_EQ(shape_of(graph("d_model: 128\n"), "l0.fc1.weight"), (Shape{128, 128}));
  EXPECT_EQ(shape_of(graph("heads: 8\n"), "l0.k_split"), (Shape{1, 8, 8}));
  EXPECT_EQ(shape_of(graph("ffn: 40\n"), "l0.fc2.weight"), (Shape{64, 40}));
  EXPECT_EQ(shape_of(graph("vocab: 33\n"), "lm_head.weight"), (Shape{33, 64}));
  EXPECT_TRUE(has_node(graph("layers: 3\n"), "l2.fc2.weight"));
  EXPECT_EQ(load("model: tiny-opt\nmax_position: 99\n").decoder->max_position, 99);
  int64_t tied = load("model: tiny-opt\n").decoder->parameters();
  EXPECT_EQ(load("model: tiny-opt\ntied_embeddings: false\n").decoder->parameters(), tied + 96 * 64);
  EXPECT_EQ(load("model: tiny-opt\npositions: rotary\n").decoder->parameters(), tied - 256 * 64);  // no position table
  Graph moe = graph("experts: 4\nexperts_per_token: 2\n");
  EXPECT_TRUE(has_op(moe, "aten.topk"));
  EXPECT_TRUE(has_op(moe, "aten.index"));
  EXPECT_EQ(shape_of(moe, "l0.experts.fc1.weight"), (Shape{4, 128, 64}));
  EXPECT_EQ(shape_of(moe, "l0.router.weight"), (Shape{4, 64}));
  EXPECT_EQ(shape_of(moe, "l0.fc1_gathered"), (Shape{2, 128, 64}));  // 1 token x top-2
  // DeepSeek-style: expert FFN width, a shared expert, sigmoid group-limited routing, dense first layer.
  Graph ds = graph(
      "experts: 4\nexperts_per_token: 2\nmoe_ffn: 32\nshared_experts: 2\nrouter: sigmoid\n"
      "expert_groups: 2\ngroup_topk: 1\nfirst_dense_layers: 1\n");
  EXPECT_EQ(shape_of(ds, "l0.fc1.weight"), (Shape{128, 64}));  // layer 0 dense, ffn wide
  EXPECT_FALSE(has_node(ds, "l0.router.weight"));
  EXPECT_EQ(shape_of(ds, "l1.experts.fc1.weight"), (Shape{4, 32, 64}));
  EXPECT_EQ(shape_of(ds, "l1.shared_expert.fc1.weight"), (Shape{64, 64}));  // 2 x moe_ffn
  EXPECT_EQ(shape_of(ds, "l1.router.selection_bias"), (Shape{4}));
  EXPECT_TRUE(has_node(ds, "l1.router_choice_kept"));
  EXPECT_TRUE(has_op(ds, "aten.gather"));
  // parameters(): the dense layer's MLP, then experts + router + bias + shared expert.
  const WorkloadSpec mw = load(
      "model: tiny-opt\nexperts: 4\nexperts_per_token: 2\nmoe_ffn: 32\n"
      "shared_experts: 2\nrouter: sigmoid\nfirst_dense_layers: 1\n");
  const int64_t dense = load("model: tiny-opt\n").decoder->parameters();
  const int64_t dense_mlp = 2 * 64 * 128 + 128 + 64;
  EXPECT_EQ(mw.decoder->parameters(), dense - dense_mlp + 4 * 2 * 64 * 32 + 64 * 4 + 2 * 64 * 64 + 4);
}

// Multi-head latent attention: the absorbed and the naive form are the same function of the
// same weights and inputs (W_uk folded into the query, W_uv into the output, or both applied to
// every cached latent), for decode against a cache, several new tokens, prefill and a batch.
// mla_form auto (the default): the cost model takes the form whose attention core does fewer
// MACs (transformer.h, choose_mla_form), so decode is absorbed and a prefill without a cache is
// naive, and the graph is the one the named form builds. A named form is kept.
TEST(WorkloadKeys, MlaFormAutoTakesTheCheaperAttentionCore) {
  struct Case {
    std::string keys;
    TransformerShape::MlaForm want;
  };
  for (const Case& c :
       {Case{"model: tiny-deepseek\ncontext: 64\n", TransformerShape::Absorbed},
        Case{"model: tiny-deepseek\nphase: prefill\nseq_len: 16\n", TransformerShape::Naive},
        Case{"model: tiny-deepseek\nphase: prefill\nseq_len: 16\nmla_form: absorbed\n", TransformerShape::Absorbed},
        Case{"model: tiny-deepseek\ncontext: 64\nmla_form: naive\n", TransformerShape::Naive}}) {
    WorkloadSpec w = load(c.keys);
    const MlaChoice choice = choose_mla_form(*w.decoder, w);
    EXPECT_EQ(choice.form, c.want) << c.keys;
    if (w.decoder->mla_form == TransformerShape::Auto) {
      EXPECT_EQ(choice.form == TransformerShape::Absorbed, choice.absorbed_macs <= choice.naive_macs) << c.keys;
    }
    WorkloadSpec named = w;
    named.decoder->mla_form = c.want;
    EXPECT_EQ(print_graph(build_graph(w)), print_graph(build_graph(named))) << c.keys;
    EXPECT_THAT(describe_mla_choice(*w.decoder, w), HasSubstr(strcat(" ", mla_form_name(c.want), ": attention core")))
        << c.keys;
  }
  // A ragged serving step: one long decode and a fresh prefill chunk are priced together.
  WorkloadSpec w = load("model: tiny-deepseek\n");
  w.ragged = {{4096, 1}, {0, 8}};
  EXPECT_EQ(choose_mla_form(*w.decoder, w).form, TransformerShape::Absorbed);
  w.ragged = {{0, 200}};
  EXPECT_EQ(choose_mla_form(*w.decoder, w).form, TransformerShape::Naive);
}

TEST(WorkloadKeys, LatentAttentionAbsorbedEqualsNaive) {
  struct Case {
    const char* phase;
    int64_t seq, ctx, batch;
  };
  for (const Case& c :
       {Case{"decode", 1, 6, 1}, Case{"decode", 3, 4, 1}, Case{"prefill", 5, 0, 1}, Case{"decode", 1, 5, 2}})
    for (const char* q_lora : {"", "q_lora_rank: 0\n"}) {
      auto graph_of = [&](const char* form) {
        WorkloadSpec w = load(std::string("model: tiny-deepseek\nmla_form: ") + form + "\n" + q_lora);
        w.phase = c.phase;
        w.seq_len = c.seq;
        w.context = c.ctx;
        w.batch = c.batch;
        return run_passes(build_graph(w), default_passes());
      };
      Graph absorbed = graph_of("absorbed"), naive = graph_of("naive");
      TensorMap in = make_random_inputs(absorbed, 7);
      std::vector<Tensor> a = run_reference(absorbed, in), n = run_reference(naive, in);
      ASSERT_EQ(a.size(), n.size());
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].data.size(), n[i].data.size());
        for (size_t e = 0; e < a[i].data.size(); ++e)
          ASSERT_NEAR(a[i].data[e], n[i].data[e], 1e-4 + 1e-4 * std::fabs(n[i].data[e]))
              << c.phase << " seq " << c.seq << " ctx " << c.ctx << " batch " << c.batch << " " << q_lora << "output "
              << i << " element " << e;
      }
    }
  // The cache is the latent and the rotary key, whatever the form; parameters as HuggingFace's
  // DeepSeek-V3 (671,026,419,200 without the multi-token-prediction layer).
  Graph g = build_graph(load("model: tiny-deepseek\ncontext: 8\n"));
  EXPECT_EQ(shape_of(g, "l0.latent_cache"), (Shape{8, 32}));
  EXPECT_EQ(shape_of(g, "l0.rope_cache"), (Shape{8, 8}));
  EXPECT_FALSE(has_node(g, "l0.k_cache"));
  EXPECT_EQ(find_transformer("deepseek-v3")->parameters(), 671026419200);
  EXPECT_EQ(find_transformer("deepseek-v3")->kv_cache_width(8), 512 + 64);
}

// A ragged step (serving: sequences at different contexts in one step) of a latent-attention
// model is its sequences' own steps: every sequence's logits and cache rows equal those of a
// step of that sequence alone on the same rows, caches and weights, in both forms.
TEST(WorkloadKeys, RaggedLatentAttentionIsItsSequencesStepByStep) {
  const std::vector<WorkloadSpec::RaggedSeq> seqs = {{5, 1}, {0, 3}, {2, 2}};  // {context, tokens}
  for (const char* form : {"absorbed", "naive"}) {
    WorkloadSpec rw = load(std::string("model: tiny-deepseek\nmla_form: ") + form + "\n");
    rw.ragged = seqs;
    Graph gr = run_passes(build_graph(rw), default_passes());
    TensorMap in = make_random_inputs(gr, 3);
    std::vector<Tensor> out = run_reference(gr, in);
    const size_t S = seqs.size(), layers = 2;
    ASSERT_EQ(out.size(), 1 + layers * 2 * S);
    int64_t row0 = 0;
    for (size_t i = 0; i < S; ++i) {
      const int64_t T = seqs[i].tokens, C = seqs[i].context;
      WorkloadSpec w1 = rw;
      w1.ragged.clear();
      w1.phase = C == 0 && T > 1 ? "prefill" : "decode";
      w1.seq_len = T;
      w1.context = C;
      Graph g1 = run_passes(build_graph(w1), default_passes());
      TensorMap one;
      auto rows = [&](const Tensor& t, const TensorType& want) {  // rows row0.. of a [N, w] input
        Tensor r(want);
        const size_t w = static_cast<size_t>(want.shape.back());
        std::copy_n(t.data.begin() + static_cast<long>(static_cast<size_t>(row0) * w), r.data.size(), r.data.begin());
        return r;
      };
      for (const auto& n : g1.nodes()) {
        if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
        std::string src = n.name;
        if (n.name == "causal_mask") src = strcat("s", i, ".causal_mask");
        if (n.name.find("_cache") != std::string::npos)
          src = strcat(n.name.substr(0, 3), "s", i, ".", n.name.substr(3));
        if (n.name == "hidden" || n.name == "rope_cos" || n.name == "rope_sin")
          one[n.name] = rows(in.at(n.name), n.type);
        else
          one[n.name] = in.at(src);
      }
      std::vector<Tensor> o1 = run_reference(g1, one);
      const size_t V = o1[0].data.size();
      for (size_t v = 0; v < V; ++v)
        ASSERT_NEAR(out[0].data[i * V + v], o1[0].data[v], 1e-4) << form << " sequence " << i << " logit " << v;
      for (size_t l = 0; l < layers; ++l)
        for (size_t k = 0; k < 2; ++k) {
          const Tensor &a = out[1 + l * 2 * S + 2 * i + k], &b = o1[1 + 2 * l + k];
          ASSERT_EQ(a.data.size(), b.data.size());
          for (size_t e = 0; e < a.data.size(); ++e)
            ASSERT_NEAR(a.data[e], b.data[e], 1e-4) << form << " sequence " << i << " layer " << l << " cache " << k;
        }
      row0 += T;
    }
  }
}

// Every bad value: InputError naming the file, the line and the key.
TEST(WorkloadKeys, BadKeysNameFileLineAndKey) {
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"model: tiny-opt\nd_modle: 64\n", "bad.yaml:2: d_modle: unknown key (did you mean 'd_model'?)"},
      {"model: tiny-opt\nd_model: 0\n", "bad.yaml:2: d_model: value 0 out of range"},
      {"model: tiny-opt\nd_model: big\n", "bad.yaml:2: d_model:"},
      {"model: tiny-opt\nheads: 0\n", "bad.yaml:2: heads: value 0 out of range"},
      {"model: tiny-opt\nkv_heads: 3\n", "bad.yaml:2: kv_heads: heads 4 must be a multiple of kv_heads 3"},
      {"model: tiny-opt\nkv_heads: 8\n", "bad.yaml:2: kv_heads: heads 4 must be a multiple of kv_heads 8"},
      {"model: tiny-opt\nheads: 6\n", "bad.yaml:2: heads: d_model 64 is not a multiple of heads 6"},
      {"model: tiny-opt\nd_model: 66\n", "bad.yaml:2: d_model: d_model 66 is not a multiple of heads 4"},
      {"model: tiny-llama\nhead_dim: 15\n", "bad.yaml:2: head_dim: rotary positions need an even head_dim, got 15"},
      {"model: tiny-opt\nhead_dim: 0\n", "bad.yaml:2: head_dim: value 0 out of range"},
      {"model: tiny-opt\nffn: -1\n", "bad.yaml:2: ffn: value -1 out of range"},
      {"model: tiny-opt\nvocab: 0\n", "bad.yaml:2: vocab: value 0 out of range"},
      {"model: tiny-opt\nlayers: 0\n", "bad.yaml:2: layers: value 0 out of range"},
      {"model: tiny-opt\nmax_position: 0\n", "bad.yaml:2: max_position: value 0 out of range"},
      {"model: tiny-opt\nnorm: batchnorm\n", "bad.yaml:2: norm: expected layernorm or rmsnorm, got 'batchnorm'"},
      {"model: tiny-opt\nmlp: tanh\n", "bad.yaml:2: mlp: expected relu, gelu, swiglu or geglu, got 'tanh'"},
      {"model: tiny-opt\npositions: sinus\n", "bad.yaml:2: positions: expected learned, rotary or alibi, got 'sinus'"},
      {"model: tiny-opt\nbias: maybe\n", "bad.yaml:2: bias:"},
      {"model: tiny-opt\ntied_embeddings: 3\n", "bad.yaml:2: tied_embeddings:"},
      {"model: tiny-opt\nexperts: 0\nexperts_per_token: 1\n", "bad.yaml:2: experts: value 0 out of range"},
      {"model: tiny-opt\nexperts: 4\n", "bad.yaml:2: experts_per_token: missing (required with experts"},
      {"model: tiny-opt\nexperts_per_token: 2\n", "bad.yaml:2: experts_per_token: goes with experts"},
      {"model: tiny-opt\nexperts: 2\nexperts_per_token: 3\n",
       "bad.yaml:3: experts_per_token: experts_per_token 3 exceeds experts 2"},
      {"model: tiny-opt\nmoe_ffn: 32\n", "bad.yaml:2: moe_ffn: goes with experts"},
      {"model: tiny-opt\nrouter: sigmoid\n", "bad.yaml:2: router: goes with experts"},
      {"model: tiny-moe\nrouter: argmax\n", "bad.yaml:2: router: expected softmax or sigmoid, got 'argmax'"},
      {"model: tiny-moe\nexpert_groups: 3\n", "bad.yaml:2: expert_groups: expert_groups 3 must divide experts 8"},
      {"model: tiny-moe\ngroup_topk: 5\n", "bad.yaml:2: group_topk: group_topk 5 exceeds expert_groups 4"},
      {"model: tiny-moe\ngroup_topk: 0\n", "bad.yaml:2: group_topk: expert_groups and group_topk go together"},
      {"model: tiny-moe\nexperts_per_token: 5\n",
       "bad.yaml:2: experts_per_token: group_topk 2 groups of 2 experts hold fewer than experts_per_token 5"},
      {"model: tiny-moe\nfirst_dense_layers: 3\n", "bad.yaml:2: first_dense_layers: first_dense_layers 3 exceeds"},
      {"model: tiny-moe\nshared_experts: -1\n", "bad.yaml:2: shared_experts: value -1 out of range"},
      {"model: tiny-moe\nmoe_ffn: nan\n", "bad.yaml:2: moe_ffn:"},
      {"model: tiny-llama\nkv_lora_rank: 32\n", "bad.yaml:2: kv_lora_rank: goes with attention: mla"},
      {"model: tiny-llama\nattention: mqa\n", "bad.yaml:2: attention: expected mha or mla, got 'mqa'"},
      {"model: tiny-llama\nattention: mla\n", "bad.yaml:2: kv_lora_rank: missing (required with attention: mla)"},
      {"model: tiny-deepseek\npositions: alibi\n", "bad.yaml:2: positions: attention: mla needs rotary positions"},
      {"model: tiny-deepseek\nqk_rope_head_dim: 7\n", "bad.yaml:2: qk_rope_head_dim: rotary needs an even width"},
      {"model: tiny-deepseek\nmla_form: fused\n",
       "bad.yaml:2: mla_form: expected absorbed, naive or auto, got 'fused'"},
      {"model: tiny-deepseek\nv_head_dim: 0\n", "bad.yaml:2: v_head_dim: value 0 out of range"},
      {"model: tiny-opt\nbatch: 257\n", "bad.yaml:2: batch: value 257 out of range"},
      {"model: tiny-opt\nbatch: 0\n", "bad.yaml:2: batch: value 0 out of range"},
      {"model: decoder\nd_model: 64\nheads: 4\nffn: 8\nvocab: 9\n",
       "bad.yaml:1: layers: missing (model: decoder describes a new model"},
      {"model: decoder\nlayers: 1\nheads: 4\nffn: 8\nvocab: 9\n", "bad.yaml:1: d_model: missing"},
      {"model: gemv\nd_model: 64\n", "bad.yaml:2: d_model: unknown key"},  // decoder keys are for decoders
      // Packed weights (docs/quantisation.md).
      {"model: tiny-llama\ngroup_size: 32\n", "bad.yaml:2: group_size: goes with weight_dtype"},
      {"model: tiny-llama\nweight_dtype: int3\n",
       "bad.yaml:2: weight_dtype: expected int8, int4, fp8_e4m3 or none, got 'int3'"},
      {"model: tiny-llama\nweight_dtype: [int4]\n", "bad.yaml:2: weight_dtype:"},
      {"model: tiny-llama\nweight_dtype: int4\n",
       "bad.yaml:2: group_size: group_size 128 does not divide d_model = 64"},
      {"model: tiny-llama\nweight_dtype: int4\ngroup_size: 64\n",
       "bad.yaml:3: group_size: group_size 64 does not divide ffn (down_proj) = 96"},
      {"model: tiny-moe\nweight_dtype: int8\ngroup_size: 64\nfirst_dense_layers: 0\n",
       "bad.yaml:3: group_size: group_size 64 does not divide moe_ffn (the experts' down_proj) = 32"},
      {"model: tiny-llama\nweight_dtype: int8\ngroup_size: 3\n", "bad.yaml:3: group_size: group_size 3 is odd"},
      {"model: tiny-llama\nweight_dtype: int8\ngroup_size: 0\n", "bad.yaml:3: group_size: value 0 out of range"},
      {"model: tiny-llama\nweight_dtype: int8\ngroup_size: nan\n", "bad.yaml:3: group_size:"},
      {"model: tiny-llama\nweight_dtype: int8\ngroup_size: 1e30\n", "bad.yaml:3: group_size:"},
      {"model: tiny-llama\nweight_dtype: none\ngroup_size: 32\n",
       "bad.yaml:3: group_size: goes with a packed weight_dtype"},
      {"model: gemv\nweight_dtype: int4\n", "bad.yaml:2: weight_dtype: packed weights apply to the built-in decoders"},
      {"model: gemv\nmoe_parallel: expert\n", "bad.yaml:2: moe_parallel: expert parallelism applies to the built-in"},
      {"model: tiny-llama\nmoe_parallel: expert\n", "bad.yaml:2: moe_parallel: goes with experts"},
      {"model: tiny-moe\nmoe_parallel: experts\n",
       "bad.yaml:2: moe_parallel: expected tensor or expert, got 'experts'"},
      {"model: tiny-moe\nmoe_parallel: tensor\nexpert_capacity: 2\n",
       "bad.yaml:3: expert_capacity: goes with moe_parallel: expert"},
      {"model: tiny-moe\nmoe_parallel: expert\nexpert_capacity: -1\n",
       "bad.yaml:3: expert_capacity: value -1 out of range"},
      {"model: tiny-moe\nmoe_parallel: expert\nexpert_capacity: .inf\n", "bad.yaml:3: expert_capacity:"},
      {"graph: g.json\ngroup_size: 32\n",
       "bad.yaml:2: group_size: a graph file stores its weights in the dtypes it declares"},
      {"model: decoders\n", "bad.yaml:1: model: unknown model 'decoders'"},
  };
  for (const Case& c : cases) EXPECT_THAT(load_error(c.text), HasSubstr(c.want)) << c.text;
}

// Batched steps: every sequence has its own KV cache and last token; the batch-1 graph is
// the same step for one sequence. So on the reference executor, sequence b of a batch-3 step
// equals a batch-1 step on sequence b's inputs (the weights shared), for decode and prefill,
// dense and mixture-of-experts.
TEST(WorkloadKeys, ABatchIsItsSequencesStepByStep) {
  struct Case {
    std::string keys;
    const char* phase;
    int64_t seq, ctx;
  };
  for (const Case& c : {Case{"model: tiny-llama\n", "decode", 1, 5}, Case{"model: tiny-opt\n", "prefill", 4, 0},
                        Case{"model: tiny-llama\npositions: alibi\nmlp: geglu\n", "decode", 2, 3},
                        Case{"model: tiny-llama\nexperts: 3\nexperts_per_token: 2\n", "decode", 1, 4},
                        Case{"model: tiny-moe\n", "decode", 1, 4}, Case{"model: tiny-deepseek\n", "decode", 1, 4},
                        Case{"model: tiny-deepseek\nmla_form: naive\n", "decode", 2, 3}}) {
    WorkloadSpec w = load(c.keys);
    w.phase = c.phase;
    w.seq_len = c.seq;
    w.context = c.ctx;
    const int64_t B = 3;
    w.batch = B;
    Graph gb = run_passes(build_graph(w), default_passes());
    TensorMap in = make_random_inputs(gb, 5);
    std::vector<Tensor> out = run_reference(gb, in);
    w.batch = 1;
    Graph g1 = run_passes(build_graph(w), default_passes());
    for (int64_t b = 0; b < B; ++b) {
      TensorMap one;
      for (const auto& n : g1.nodes()) {
        if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
        const Tensor& t = in.at(n.name);
        Tensor s(n.type);
        // Per-sequence inputs (hidden rows, KV caches) are B slices along their first dim.
        size_t per = s.data.size();
        size_t off = t.data.size() == per * B ? static_cast<size_t>(b) * per : 0;
        ASSERT_TRUE(t.data.size() == per || t.data.size() == per * B) << n.name;
        std::copy(t.data.begin() + static_cast<long>(off), t.data.begin() + static_cast<long>(off + per),
                  s.data.begin());
        one[n.name] = s;
      }
      std::vector<Tensor> o1 = run_reference(g1, one);
      ASSERT_EQ(o1.size(), out.size());
      for (size_t i = 0; i < o1.size(); ++i) {
        size_t per = o1[i].data.size();
        ASSERT_EQ(out[i].data.size(), per * B);
        for (size_t e = 0; e < per; ++e)
          ASSERT_NEAR(out[i].data[static_cast<size_t>(b) * per + e], o1[i].data[e], 1e-4)
              << c.keys << c.phase << " sequence " << b << " output " << i << " element " << e;
      }
    }
  }
}

// The simulated LPU computes batched steps as the reference does (functional mode), both
// schedules.
TEST(WorkloadKeys, BatchedStepsOnTheLpuMatchTheReference) {
  struct Case {
    std::string keys;
    const char* phase;
    int64_t seq, ctx;
  };
  for (const Case& c : {Case{"model: tiny-opt\n", "decode", 1, 6}, Case{"model: tiny-llama\n", "decode", 1, 5},
                        Case{"model: tiny-llama\n", "prefill", 4, 0},
                        Case{"model: tiny-opt\npositions: alibi\nmlp: geglu\nhead_dim: 8\n", "decode", 1, 3},
                        Case{"model: tiny-llama\nexperts: 3\nexperts_per_token: 2\n", "decode", 1, 4},
                        Case{"model: tiny-moe\n", "decode", 1, 4}, Case{"model: tiny-deepseek\n", "decode", 1, 4},
                        Case{"model: tiny-deepseek\nmla_form: naive\n", "decode", 2, 3}}) {
    WorkloadSpec w = load(c.keys + "batch: 3\n");
    w.phase = c.phase;
    w.seq_len = c.seq;
    w.context = c.ctx;
    for (const std::string policy : {"none", "greedy"}) {
      RunOutcome o = run_job(w, testutil::small_arch(), policy, true);
      ASSERT_TRUE(o.check.has_value());
      EXPECT_TRUE(o.check->ok) << c.keys << c.phase << " " << policy << ": " << o.check->worst;
    }
  }
}
