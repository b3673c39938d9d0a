"""Model KV geometry: presets with their sources, and a Hugging Face `config.json` reader.

Bytes per token per layer: 2 (K and V) × kv_heads/tp × head_dim × dtype bytes; for MLA
(DeepSeek) one latent of kv_lora_rank + qk_rope_head_dim per token per layer, replicated
on every tensor-parallel rank. A layer with a sliding window (gpt-oss alternates 128-token
windows with full attention) holds only its window's tokens.

What `plan` needs to price recomputing the KV rides along: parameter counts (total, and active
per token for a mixture of experts) and the attention's shape (query heads, the widths of a
query-key and a value head).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kvbench.errors import BadInput, unknown_name
from kvbench.input_files import read_json_file
from kvbench.kv.model_params import count_params

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}


@dataclass(frozen=True)
class ModelGeometry:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    mla_dim: int | None = None  # kv_lora_rank + qk_rope_head_dim for MLA models
    source: str = ""
    q_heads: int | None = None  # attention (query) heads; None: unknown, so attention FLOPs are too
    qk_head_dim: int | None = None  # width of one query/key head (MLA: nope + rope); default head_dim
    v_head_dim: int | None = None  # width of one value head; default head_dim
    sliding_window: int | None = None  # tokens a windowed layer attends to and keeps
    sliding_layers: int = 0  # how many of the layers are windowed
    total_params: float | None = None  # parameters, all of them
    active_params: float | None = None  # parameters one token passes through (a MoE's routed subset)
    params_source: str = ""

    @property
    def is_mla(self) -> bool:
        return self.mla_dim is not None

    def tensors_per_layer(self) -> int:
        """Separate KV tensors per layer: K and V, or one latent for MLA."""
        return 1 if self.is_mla else 2

    def unit_bytes_per_token(self, dtype: str, tp: int = 1) -> int:
        """Bytes of one tensor (K, V or latent) of one layer for one token on one TP rank."""
        size = dtype_bytes(dtype)
        if self.is_mla:
            return self.mla_dim * size
        if tp < 1 or self.kv_heads % tp:
            raise BadInput(f"bad tp={tp}: it must divide {self.name}'s {self.kv_heads} KV heads")
        return self.kv_heads // tp * self.head_dim * size

    def bytes_per_token_per_layer(self, dtype: str, tp: int = 1) -> int:
        return self.tensors_per_layer() * self.unit_bytes_per_token(dtype, tp)

    def bytes_per_token(self, dtype: str, tp: int = 1) -> int:
        """KV bytes one token occupies on one GPU (all layers), windows ignored: what one block holds."""
        return self.layers * self.bytes_per_token_per_layer(dtype, tp)

    def held_tokens(self, tokens: int) -> int:
        """Token-layers a context of `tokens` keeps: every layer its tokens, a windowed one at most
        its window."""
        window = min(tokens, self.sliding_window) if self.sliding_window else tokens
        return (self.layers - self.sliding_layers) * tokens + self.sliding_layers * window

    def kv_bytes(self, tokens: int, dtype: str, tp: int = 1) -> int:
        """KV bytes a context of `tokens` holds on one GPU, sliding windows honoured."""
        return self.held_tokens(tokens) * self.bytes_per_token_per_layer(dtype, tp)

    def attention_pairs(self, tokens: int) -> int:
        """(query, key) pairs a causal prefill of `tokens` computes, summed over layers: token i
        attends to i keys, or to its window's."""
        full = tokens * (tokens + 1) // 2
        w = self.sliding_window
        windowed = full if not w or tokens <= w else w * (w + 1) // 2 + (tokens - w) * w
        return (self.layers - self.sliding_layers) * full + self.sliding_layers * windowed


def dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise unknown_name("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[dtype]


_HF = "config.json on the Hugging Face Hub"
_CARD = "model card on the Hugging Face Hub"
PRESETS = {g.name: g for g in (
    ModelGeometry("Llama-3.1-8B", 32, 8, 128, source=f"meta-llama/Llama-3.1-8B {_HF}", q_heads=32,
                  total_params=8.03e9, active_params=8.03e9, params_source=f"meta-llama/Llama-3.1-8B {_CARD}: 8.03B"),
    ModelGeometry("Llama-3.1-70B", 80, 8, 128, source=f"meta-llama/Llama-3.1-70B {_HF}", q_heads=64,
                  total_params=70.6e9, active_params=70.6e9, params_source=f"meta-llama/Llama-3.1-70B {_CARD}: 70.6B"),
    ModelGeometry("Llama-3.1-405B", 126, 8, 128, source=f"meta-llama/Llama-3.1-405B {_HF}", q_heads=128,
                  total_params=405.9e9, active_params=405.9e9,
                  params_source=f"meta-llama/Llama-3.1-405B {_CARD}: 405.9B"),
    ModelGeometry("Qwen2.5-32B", 64, 8, 128, source=f"Qwen/Qwen2.5-32B {_HF}", q_heads=40,
                  total_params=32.5e9, active_params=32.5e9, params_source=f"Qwen/Qwen2.5-32B {_CARD}: 32.5B"),
    ModelGeometry("Qwen3-235B-A22B", 94, 4, 128, source=f"Qwen/Qwen3-235B-A22B {_HF}", q_heads=64,
                  total_params=235e9, active_params=22e9,
                  params_source=f"Qwen/Qwen3-235B-A22B {_CARD}: 235B total, 22B activated"),
    ModelGeometry("DeepSeek-V3", 61, 1, 576, mla_dim=512 + 64,
                  source=f"deepseek-ai/DeepSeek-V3 {_HF}: kv_lora_rank 512 + qk_rope_head_dim 64 (MLA)",
                  q_heads=128, qk_head_dim=128 + 64, v_head_dim=128, total_params=671e9, active_params=37e9,
                  params_source=f"deepseek-ai/DeepSeek-V3 {_CARD}: 671B total, 37B activated (MTP module excluded)"),
    ModelGeometry("gpt-oss-120b", 36, 8, 64, source=f"openai/gpt-oss-120b {_HF}: 128-token sliding window in 18 "
                  "of 36 layers", q_heads=64, sliding_window=128, sliding_layers=18, total_params=117e9,
                  active_params=5.1e9, params_source=f"openai/gpt-oss-120b {_CARD}: 117B total, 5.1B active"),
)}


def get_model(name: str) -> ModelGeometry:
    """A preset by name, or a `config.json` path; `BadInput` lists the presets otherwise."""
    if name in PRESETS:
        return PRESETS[name]
    if Path(name).is_dir():  # a downloaded Hugging Face model folder
        if not (Path(name) / "config.json").is_file():
            raise BadInput(f"model '{name}' is a folder without a config.json")
        return replace(read_hf_config(Path(name) / "config.json"), name=Path(name).name)
    if name.endswith(".json") or Path(name).is_file():
        return read_hf_config(Path(name))
    raise unknown_name("model", name, PRESETS, list_all=True)


# Fields a config may carry that must be positive integers where given (counting and geometry read them).
_POSITIVE_INTEGERS = ("hidden_size", "intermediate_size", "moe_intermediate_size", "vocab_size", "head_dim",
                      "num_attention_heads", "num_key_value_heads", "num_experts", "n_routed_experts",
                      "num_local_experts", "num_experts_per_tok", "kv_lora_rank", "q_lora_rank",
                      "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def read_hf_config(path: Path) -> ModelGeometry:
    """Geometry from a Hugging Face `config.json`; every field is checked (present, a positive
    integer, heads dividing evenly), and a bad one is named in a one-line `BadInput`."""
    where = f"model config '{path}'"
    config = read_json_file(path, where)
    if not isinstance(config, dict):
        raise BadInput(f"{where} is a JSON {type(config).__name__}, not an object")
    config = config.get("text_config", config)
    if not isinstance(config, dict):
        raise BadInput(f"{where}: 'text_config' is not an object")

    def need(key: str, default: int | None = None) -> int:
        if key not in config or config[key] is None:
            if default is not None:
                return default
            raise BadInput(f"{where} lacks '{key}'")
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise BadInput(f"{where}: '{key}' must be a positive integer (found {value!r})")
        return value

    layers = need("num_hidden_layers")
    for key in _POSITIVE_INTEGERS:  # present but of the wrong type: named here, not ignored by counting
        if config.get(key) is not None:
            need(key)
    routed = next((config[k] for k in ("num_local_experts", "n_routed_experts", "num_experts")
                   if config.get(k) is not None), None)
    if routed is not None and config.get("num_experts_per_tok") is not None and config["num_experts_per_tok"] > routed:
        # counting would price every token as running more experts than the model has
        raise BadInput(f"{where}: num_experts_per_tok={config['num_experts_per_tok']} is more than the {routed} "
                       "experts the model has")
    counted = count_params(config)  # None where the architecture is not one kvbench can count
    sizes = {"total_params": counted[0], "active_params": counted[1],
             "params_source": f"counted from {path}"} if counted else {}
    if "kv_lora_rank" in config:
        mla = need("kv_lora_rank") + need("qk_rope_head_dim")
        heads = need("num_attention_heads") if "num_attention_heads" in config else None  # only prefill needs it
        qk = need("qk_nope_head_dim") + need("qk_rope_head_dim") if "qk_nope_head_dim" in config else None
        return ModelGeometry(path.stem, layers, 1, mla, mla_dim=mla, source=str(path), q_heads=heads,
                             qk_head_dim=qk, v_head_dim=need("v_head_dim") if "v_head_dim" in config else None, **sizes)
    heads = need("num_attention_heads")
    kv_heads = need("num_key_value_heads", heads)
    if heads % kv_heads:
        raise BadInput(f"{where}: num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}")
    if config.get("head_dim") is not None:
        head_dim = need("head_dim")
    else:
        hidden = need("hidden_size")
        if hidden % heads:
            raise BadInput(f"{where}: hidden_size={hidden} is not a multiple of num_attention_heads={heads} "
                           "(and no head_dim is given)")
        head_dim = hidden // heads
    window, windowed = _sliding(config, layers, where)
    return ModelGeometry(path.stem, layers, kv_heads, head_dim, source=str(path), q_heads=heads,
                         sliding_window=window, sliding_layers=windowed, **sizes)


def _sliding(config: dict, layers: int, where: str) -> tuple[int | None, int]:
    """(window, windowed layers): from `layer_types` (gpt-oss, Gemma), else every layer when
    `sliding_window` is set and not switched off (`use_sliding_window: false`, as Qwen2 writes)."""
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return None, 0
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise BadInput(f"{where}: 'sliding_window' must be a positive integer (found {window!r})")
    types = config.get("layer_types")
    if types is None:
        return window, layers
    if not isinstance(types, list) or len(types) != layers:
        raise BadInput(f"{where}: 'layer_types' must list one type per layer ({layers})")
    return window, sum(t == "sliding_attention" for t in types)
