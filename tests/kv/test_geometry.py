"""Geometry against numbers anyone can compute by hand."""

import json

import pytest

from kvbench.errors import BadInput
from kvbench.kv.geometry import PRESETS, get_model, read_hf_config
from kvbench.kv.layouts import KVShape
from kvbench.kv.model_params import count_params


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


def test_a_field_of_the_wrong_type_is_named_even_where_another_field_stands_in_for_it(tmp_path):
    bad = tmp_path / "list.json"
    bad.write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32, "head_dim": 128,
                               "hidden_size": [512]}))
    with pytest.raises(BadInput, match=r"'hidden_size' must be a positive integer \(found \[512\]\)"):
        read_hf_config(bad)


def test_a_model_folder_is_read_through_its_config_json(tmp_path):
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32,
                                                    "num_key_value_heads": 8, "hidden_size": 4096}))
    assert get_model(str(folder)).bytes_per_token("bf16") == get_model("Llama-3.1-8B").bytes_per_token("bf16")
    with pytest.raises(BadInput, match="is a folder without a config.json"):
        get_model(str(tmp_path))


LLAMA_8B = {"vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": False}
DEEPSEEK_V3 = {"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
               "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
               "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
               "v_head_dim": 128}
GPT_OSS_120B = {"vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 36,
                "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128,
                "num_experts_per_tok": 4, "tie_word_embeddings": False, "sliding_window": 128,
                "layer_types": ["sliding_attention", "full_attention"] * 18}


@pytest.mark.parametrize("config,total,active", [
    (LLAMA_8B, 8.03e9, 7.50e9),       # model card 8.03B; the embedding lookup is no product: 7.5B active
    (DEEPSEEK_V3, 671e9, 37e9),       # model card: 671B total, 37B activated
    (GPT_OSS_120B, 117e9, 5.1e9),     # model card: 117B total, 5.1B active
])
def test_parameters_are_counted_from_a_config_like_the_model_cards(config, total, active):
    counted_total, counted_active = count_params(config)
    assert counted_total == pytest.approx(total, rel=0.01) and counted_active == pytest.approx(active, rel=0.02)


def test_a_config_gives_its_attention_shape_window_and_parameters(tmp_path):
    path = tmp_path / "gpt-oss.json"
    path.write_text(json.dumps(GPT_OSS_120B))
    model = get_model(str(path))
    assert (model.q_heads, model.sliding_window, model.sliding_layers) == (64, 128, 18)
    assert model.active_params == pytest.approx(5.13e9, rel=0.01) and "counted from" in model.params_source
    qwen = tmp_path / "qwen2.json"
    qwen.write_text(json.dumps({**LLAMA_8B, "sliding_window": 4096, "use_sliding_window": False}))
    assert get_model(str(qwen)).sliding_layers == 0  # a window switched off is no window
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps(DEEPSEEK_V3))
    latent = get_model(str(ds))
    assert (latent.mla_dim, latent.qk_head_dim, latent.v_head_dim) == (576, 192, 128)


def test_a_config_kvbench_cannot_count_leaves_the_count_to_the_user():
    assert count_params({"hidden_size": 4096, "num_hidden_layers": 32}) is None
