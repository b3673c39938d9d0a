"""Geometry against numbers anyone can compute by hand."""

import json

import pytest

from kvbench.errors import BadInput
from kvbench.kv.geometry import PRESETS, get_model, read_hf_config
from kvbench.kv.layouts import KVShape


def test_llama_70b_bf16_is_327680_bytes_per_token():
    assert get_model("Llama-3.1-70B").bytes_per_token("bf16") == 327_680  # 80 layers x 2 x 8 heads x 128 x 2 B


def test_fp8_halves_the_bytes_and_tp_splits_the_heads():
    llama = get_model("Llama-3.1-70B")
    assert llama.bytes_per_token("fp8") == 327_680 // 2
    assert llama.bytes_per_token("bf16", tp=8) == 327_680 // 8
    with pytest.raises(BadInput, match="tp=3: it must divide"):
        llama.bytes_per_token("bf16", tp=3)


def test_qwen25_32b_block_is_128_fragments_of_32KiB():
    shape = KVShape.of(get_model("Qwen2.5-32B"), block_tokens=16, dtype="bf16")
    assert shape.units == 128 and shape.unit_bytes == 32_768


def test_deepseek_v3_mla_is_1152_bytes_per_token_per_layer_and_replicated():
    ds = get_model("DeepSeek-V3")
    assert ds.bytes_per_token_per_layer("bf16") == 1_152
    assert ds.bytes_per_token_per_layer("bf16", tp=8) == 1_152  # the latent is not split across ranks
    assert ds.tensors_per_layer() == 1


def test_every_preset_has_a_source():
    assert all(g.source for g in PRESETS.values())
    assert len(PRESETS) == 7


def test_unknown_model_lists_the_presets():
    with pytest.raises(BadInput, match=r"unknown model 'Llama-3\.1-7B'; did you mean .* \(known: .*DeepSeek-V3.*gpt-oss-120b"):
        get_model("Llama-3.1-7B")


def test_hf_config_reader(tmp_path):
    gqa = tmp_path / "gqa.json"
    gqa.write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                               "hidden_size": 4096}))
    assert get_model(str(gqa)).bytes_per_token("bf16") == get_model("Llama-3.1-8B").bytes_per_token("bf16")
    mla = tmp_path / "mla.json"
    mla.write_text(json.dumps({"num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}))
    assert read_hf_config(mla).bytes_per_token("bf16") == get_model("DeepSeek-V3").bytes_per_token("bf16")
    explicit = tmp_path / "hd.json"
    explicit.write_text(json.dumps({"num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
                                    "head_dim": 64, "hidden_size": 2880}))
    assert read_hf_config(explicit).head_dim == 64


def test_hf_config_missing_field_is_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"num_attention_heads": 32}))
    with pytest.raises(BadInput, match="lacks 'num_hidden_layers'"):
        read_hf_config(bad)
