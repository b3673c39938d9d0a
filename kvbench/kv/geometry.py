"""Model KV geometry: presets with their sources, and a Hugging Face `config.json` reader.

Bytes per token per layer: 2 (K and V) × kv_heads/tp × head_dim × dtype bytes; for MLA
(DeepSeek) one latent of kv_lora_rank + qk_rope_head_dim per token per layer, replicated
on every tensor-parallel rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kvbench.errors import BadInput, unknown_name
from kvbench.json_input import read_json_file

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}


@dataclass(frozen=True)
class ModelGeometry:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    mla_dim: int | None = None  # kv_lora_rank + qk_rope_head_dim for MLA models
    source: str = ""

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
        """KV bytes one token occupies on one GPU (all layers)."""
        return self.layers * self.bytes_per_token_per_layer(dtype, tp)


def dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise unknown_name("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[dtype]


_HF = "config.json on the Hugging Face Hub"
PRESETS = {g.name: g for g in (
    ModelGeometry("Llama-3.1-8B", 32, 8, 128, source=f"meta-llama/Llama-3.1-8B {_HF}"),
    ModelGeometry("Llama-3.1-70B", 80, 8, 128, source=f"meta-llama/Llama-3.1-70B {_HF}"),
    ModelGeometry("Llama-3.1-405B", 126, 8, 128, source=f"meta-llama/Llama-3.1-405B {_HF}"),
    ModelGeometry("Qwen2.5-32B", 64, 8, 128, source=f"Qwen/Qwen2.5-32B {_HF}"),
    ModelGeometry("Qwen3-235B-A22B", 94, 4, 128, source=f"Qwen/Qwen3-235B-A22B {_HF}"),
    ModelGeometry("DeepSeek-V3", 61, 1, 576, mla_dim=512 + 64,
                  source=f"deepseek-ai/DeepSeek-V3 {_HF}: kv_lora_rank 512 + qk_rope_head_dim 64 (MLA)"),
    ModelGeometry("gpt-oss-120b", 36, 8, 64, source=f"openai/gpt-oss-120b {_HF}"),
)}


def get_model(name: str) -> ModelGeometry:
    """A preset by name, or a `config.json` path; `BadInput` lists the presets otherwise."""
    if name in PRESETS:
        return PRESETS[name]
    if name.endswith(".json") or Path(name).is_file():
        return read_hf_config(Path(name))
    raise unknown_name("model", name, PRESETS, list_all=True)


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
    if "kv_lora_rank" in config:
        mla = need("kv_lora_rank") + need("qk_rope_head_dim")
        return ModelGeometry(path.stem, layers, 1, mla, mla_dim=mla, source=str(path))
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
    return ModelGeometry(path.stem, layers, kv_heads, head_dim, source=str(path))
