"""HuggingFace `transformers` models through the exporter: small configs built in code (no
hub download), a logits-only wrapper, and a decode step with a static KV cache.

    from lpu_frontend import hf
    model = hf.build("llama", attn="sdpa")                     # random weights, seed 0
    hf.export_logits(model, "out/llama.json", seq_len=8)       # forward(input_ids) -> logits
    hf.export_decode(hf.build("llama", attn="eager"), "out/llama_decode.json",
                     max_cache_len=32, position=5)              # one token against a static cache

Needs torch >= 2.1 and transformers >= 5 (the accelerator machine has torch 2.11 and
transformers 5.17; Debian's torch 1.13 has neither torch.export nor a transformers package).
scripts/export_hf_fixtures.py drives it for the fixtures in tests/fixtures/hf/.
"""

import torch

from .export import export

# Shared by every family: small enough for fixtures of ~100-300 KB each.
SMALL = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=128, pad_token_id=0, bos_token_id=1, eos_token_id=2)

# family -> (config class, model class, config keys on top of SMALL). Names are transformers'.
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(num_key_value_heads=2)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(num_key_value_heads=2, sliding_window=None)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(num_key_value_heads=2)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    # Gemma-3 (text): sliding-window and global layers, q/k norms, pre- and post-norms.
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(num_key_value_heads=2)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", dict()),
    "falcon": ("FalconConfig", "FalconForCausalLM", dict(new_decoder_architecture=False, multi_query=True)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, n_inner=128)),
    "opt": ("OPTConfig", "OPTForCausalLM", dict(ffn_dim=128, word_embed_proj_dim=64)),
    "bert": ("BertConfig", "BertForMaskedLM", dict()),
    # The rest of the coverage matrix (docs/coverage.md): families HyperAccel's stack lists and
    # those of 2025-26, at the same small sizes.
    "llama3": ("LlamaConfig", "LlamaForCausalLM", dict(num_key_value_heads=2, rope_theta=500000.0,
                                                      rope_scaling=dict(rope_type="llama3", factor=8.0,
                                                                        low_freq_factor=1.0, high_freq_factor=4.0,
                                                                        original_max_position_embeddings=64))),
    "phi": ("PhiConfig", "PhiForCausalLM", dict()),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, rotary_dim=8)),
    "gpt_bigcode": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM", dict(n_embd=64, n_layer=2, n_head=4, n_positions=128,
                                                                     n_inner=128, multi_query=True)),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", dict(num_key_value_heads=2)),
    "exaone4": ("Exaone4Config", "Exaone4ForCausalLM", dict(num_key_value_heads=2)),
    "cohere": ("CohereConfig", "CohereForCausalLM", dict(num_key_value_heads=2)),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", dict()),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", dict()),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", dict(num_key_value_heads=2)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    "granite": ("GraniteConfig", "GraniteForCausalLM", dict(num_key_value_heads=2)),
    "glm": ("GlmConfig", "GlmForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", dict(num_key_value_heads=2)),
    "internlm2": ("InternLM2Config", "InternLM2ForCausalLM", dict()),  # remote code only: not in transformers
    "mamba": ("MambaConfig", "MambaForCausalLM", dict(state_size=16)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(num_key_value_heads=2, num_local_experts=4,
                                                            num_experts_per_tok=2)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", dict(num_key_value_heads=2, num_experts=4,
                                                                 num_experts_per_tok=2, moe_intermediate_size=64,
                                                                 shared_expert_intermediate_size=64,
                                                                 decoder_sparse_step=1)),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(num_key_value_heads=2, head_dim=16, num_experts=4,
                                                                 num_experts_per_tok=2, moe_intermediate_size=64,
                                                                 decoder_sparse_step=1)),
    # DeepSeek-V3: multi-head latent attention, sigmoid routing with group-limited top-k, a
    # shared expert, the first layer dense.
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", dict(num_key_value_heads=4, n_routed_experts=8,
                                                                       num_experts_per_tok=2, moe_intermediate_size=32,
                                                                       n_shared_experts=1, first_k_dense_replace=1,
                                                                       n_group=2, topk_group=1, kv_lora_rank=32,
                                                                       q_lora_rank=48, qk_rope_head_dim=8,
                                                                       qk_nope_head_dim=16, v_head_dim=16)),
}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3"}
# Families whose decode step the coverage matrix also compares with the built-in decoder keys:
# exported from inputs_embeds too, since a built-in step starts from the token embeddings.
COVERAGE_EMBEDS = {"llama", "llama3", "mistral", "phi3", "qwen2", "qwen3", "granite", "smollm3", "gemma", "gpt2"}
# Families exported for the coverage matrix only (scripts/export_hf_fixtures.py --coverage), not
# as ctest fixtures (tests/fixtures/hf).
COVERAGE_ONLY = {"llama3", "phi", "gptj", "gpt_bigcode", "starcoder2", "exaone4", "cohere", "olmo", "olmo2", "stablelm",
                 "qwen3", "gemma2", "granite", "glm", "smollm3", "internlm2", "mamba"}
# MoE expert implementations, tried in order: the first torch.export takes wins. "batched_mm"
# gathers each token's expert weights (static shapes); "eager" loops over experts with
# data-dependent token lists, which torch.export cannot trace.
EXPERTS = ("batched_mm", "eager", "grouped_mm")


def coverage_sizes(family: str) -> dict:
    """Config overrides for the coverage matrix's graphs (docs/coverage.md): half the width and a
    quarter of the vocabulary of SMALL, so that ~60 graphs with their arrays stay a few MB."""
    extra = FAMILIES[family][2]
    if "n_embd" in extra:  # GPT-2 style keys
        out = dict(n_embd=32, n_inner=64)
    else:
        out = dict(hidden_size=32, intermediate_size=64)
    out["vocab_size"] = 128
    if "head_dim" in extra:
        out["head_dim"] = 8
    if "moe_intermediate_size" in extra:
        out["moe_intermediate_size"] = 32
    if "shared_expert_intermediate_size" in extra:
        out["shared_expert_intermediate_size"] = 32
    if "kv_lora_rank" in extra:
        out.update(kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=8)
    if "rotary_dim" in extra:
        out["rotary_dim"] = 4
    if family == "mamba":
        out.update(state_size=8, intermediate_size=64)
    return out


def config(family: str, **overrides):
    import transformers

    cfg_cls, _, extra = FAMILIES[family]
    keys = {**SMALL, **extra, **overrides}
    return getattr(transformers, cfg_cls)(**keys)


def build(family: str, attn: str = "eager", seed: int = 0, experts: str = None, dtype=torch.float32,
          device="cpu", **overrides):
    """The family's model from its small config, random weights (seed), eval mode."""
    import transformers

    cfg = config(family, **overrides)
    cfg._attn_implementation = attn
    if experts:
        cfg._experts_implementation = experts
    torch.manual_seed(seed)
    cls = getattr(transformers, FAMILIES[family][1])
    with torch.device(device):
        try:
            model = cls._from_config(cfg, attn_implementation=attn, dtype=dtype)
        except TypeError:  # transformers < 4.56 spells it torch_dtype
            model = cls._from_config(cfg, attn_implementation=attn, torch_dtype=dtype)
    if experts and hasattr(model, "set_experts_implementation"):
        model.set_experts_implementation(experts)
    return model.eval()


class Logits(torch.nn.Module):
    """forward(input_ids) -> model(input_ids=input_ids, use_cache=False).logits (encoders take
    no use_cache)."""

    def __init__(self, model, use_cache_arg: bool = True):
        super().__init__()
        self.m = model
        self.use_cache_arg = use_cache_arg

    def forward(self, input_ids):
        if self.use_cache_arg:
            return self.m(input_ids=input_ids, use_cache=False).logits
        return self.m(input_ids=input_ids).logits


def token_ids(vocab: int, seq_len: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (1, seq_len), generator=g)


ENCODERS = {"bert"}


def export_logits(model, path: str, seq_len: int = 8, encoder: bool = False, **kw):
    return export(Logits(model, not encoder), (token_ids(model.config.vocab_size, seq_len),), path, **kw)


def decode_module(model, max_cache_len: int):
    """transformers' exportable static-cache wrapper: the cache's key/value tensors are
    registered buffers the forward writes with index_copy_ (and a length counter per layer)."""
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    return TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=max_cache_len).eval()


def export_decode(model, path: str, max_cache_len: int = 32, position: int = 5, embeds: bool = False,
                  write_arrays: bool = True, seed: int = 2, prefill: bool = True, **kw):
    """One decode step at `position` against a static cache of `max_cache_len` tokens, after a
    prefill of `position` random tokens (so the cache holds real keys/values). The graph's
    inputs are the token (`input_ids` [1, 1], or `inputs_embeds` [1, 1, hidden] with
    embeds=True), `cache_position` [1] and every layer's key/value cache; its outputs the logits
    and, per layer, the keys and values written (the rows index_copy_ stores)."""
    module = decode_module(model, max_cache_len)
    dev = next(model.parameters()).device
    vocab = model.config.vocab_size
    prompt = token_ids(vocab, position + 1, seed).to(dev)
    with torch.no_grad():
        if position > 0 and prefill:
            if embeds:
                module(inputs_embeds=model.get_input_embeddings()(prompt[:, :position]),
                       cache_position=torch.arange(position, device=dev))
            else:
                module(input_ids=prompt[:, :position], cache_position=torch.arange(position, device=dev))
    pos = torch.tensor([position], device=dev)
    if embeds:
        with torch.no_grad():
            x = model.get_input_embeddings()(prompt[:, position:]).detach()
        kwargs = {"inputs_embeds": x, "cache_position": pos}
    else:
        kwargs = {"input_ids": prompt[:, position:], "cache_position": pos}
    kw.setdefault("grad", False)  # see capture._decomposed_export
    return export(module, (), path, kwargs=kwargs, ignore_mutations=r"cumulative_length",
                  write_arrays=write_arrays, **kw)
