"""Parameter counts from a Hugging Face `config.json`: all of them, and those one token's forward
pass multiplies through (a mixture of experts routes each token through a few experts).

Counted per weight matrix for the architectures kvbench knows (dense GQA decoders — Llama, Qwen2,
Mistral —, MoE decoders with routed and shared experts — Qwen3-MoE, Mixtral, gpt-oss,
DeepSeek-V3 —, and MLA attention); norms and biases are left out (well under 0.1 %). The input
embedding is a lookup, not a product, so it counts in the total and not in the active count; the
output projection counts in both. A config kvbench cannot count gives None: `plan --params`
states the figures instead.
"""

from __future__ import annotations

from typing import Any


def _int(config: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _attention(config: dict[str, Any], hidden: int, heads: int) -> int:
    if config.get("kv_lora_rank"):  # MLA: low-rank query and key/value projections
        nope, rope, v = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
        q_rank = config.get("q_lora_rank")
        query = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        kv_rank = config["kv_lora_rank"]
        return query + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * hidden
    kv_heads = _int(config, "num_key_value_heads") or heads
    head_dim = _int(config, "head_dim") or hidden // heads
    return hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2  # q and o; k and v


def count_params(config: dict[str, Any]) -> tuple[float, float] | None:
    """(total, active) parameters, or None when the config lacks what counting needs."""
    hidden, layers = _int(config, "hidden_size"), _int(config, "num_hidden_layers")
    heads, vocab = _int(config, "num_attention_heads"), _int(config, "vocab_size")
    if not (hidden and layers and heads and vocab):
        return None
    try:
        attention = _attention(config, hidden, heads)
    except (KeyError, TypeError):
        return None
    experts = _int(config, "n_routed_experts", "num_experts", "num_local_experts")
    per_token = _int(config, "num_experts_per_tok")
    dense_width = _int(config, "intermediate_size")
    expert_width = _int(config, "moe_intermediate_size") or dense_width
    shared = _int(config, "n_shared_experts") or 0
    dense_layers = min(_int(config, "first_k_dense_replace") or 0, layers) if experts else layers
    if not dense_width and (dense_layers or not expert_width):
        return None
    dense_mlp = 3 * hidden * (dense_width or 0)  # gate, up and down
    total = active = layers * attention + dense_layers * dense_mlp
    if experts:
        if not (per_token and expert_width):
            return None
        expert = 3 * hidden * expert_width
        router = hidden * experts
        moe_layers = layers - dense_layers
        total += moe_layers * (experts * expert + shared * expert + router)
        active += moe_layers * (per_token * expert + shared * expert + router)
    embedding = vocab * hidden
    output = 0 if config.get("tie_word_embeddings") else vocab * hidden
    return float(total + embedding + output), float(active + (output or embedding))
