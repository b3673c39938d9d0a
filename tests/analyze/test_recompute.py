"""Recomputing KV instead of restoring it: FLOPs by hand, rates by precedence, the break-even."""

import pytest

from kvbench.analyze.decide.recompute import ComputeRate, break_even, compute_rate, prefill_flops, recompute_seconds
from kvbench.analyze.decide.restore_plan import TierPlan, decide
from kvbench.errors import BadInput
from kvbench.kv.geometry import ModelGeometry, get_model


def test_prefill_flops_of_a_dense_model_by_hand():
    # Llama-3.1-70B, 1000 tokens: 2 × 70.6e9 × 1000, plus 80 layers × 2 × 64 heads × (128 + 128) × 1000·1001/2 pairs
    expected = 2 * 70.6e9 * 1000 + 80 * 2 * 64 * 256 * 500_500
    assert prefill_flops(get_model("Llama-3.1-70B"), 1000) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(1.42512e14, rel=1e-5)


def test_prefill_flops_of_a_mixture_of_experts_count_only_the_active_parameters():
    # Qwen3-235B-A22B, 4096 tokens: 22e9 active (not 235e9), 94 layers × 2 × 64 heads × 256 × 4096·4097/2 pairs
    expected = 2 * 22e9 * 4096 + 94 * 2 * 64 * 256 * (4096 * 4097 // 2)
    assert prefill_flops(get_model("Qwen3-235B-A22B"), 4096) == pytest.approx(expected, rel=1e-12)
    # DeepSeek-V3's MLA attends with 192-wide query/key heads and 128-wide value heads
    ds = get_model("DeepSeek-V3")
    assert prefill_flops(ds, 10) == pytest.approx(2 * 37e9 * 10 + 61 * 2 * 128 * (192 + 128) * 55, rel=1e-12)


def test_sliding_window_layers_attend_to_and_hold_only_their_window():
    oss = get_model("gpt-oss-120b")
    full = 8192 * 8193 // 2
    windowed = 128 * 129 // 2 + (8192 - 128) * 128
    assert oss.attention_pairs(8192) == 18 * full + 18 * windowed
    per_token_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads of 64, bf16
    assert oss.kv_bytes(8192, "bf16") == 18 * 8192 * per_token_layer + 18 * 128 * per_token_layer
    assert oss.kv_bytes(8192, "bf16") < 0.51 * oss.bytes_per_token("bf16") * 8192  # about half the unwindowed count
    assert oss.kv_bytes(100, "bf16") == 100 * oss.bytes_per_token("bf16")  # under the window: every token


def test_tensor_parallelism_divides_the_prefill():
    rate = ComputeRate(1000.0, "given", "given")
    llama = get_model("Llama-3.1-70B")
    assert recompute_seconds(llama, 4096, rate, 0.5, tp=4) == pytest.approx(recompute_seconds(llama, 4096, rate, 0.5) / 4)


def test_a_model_without_a_parameter_count_asks_for_one():
    bare = ModelGeometry("mine", 32, 8, 128, q_heads=32)
    with pytest.raises(BadInput, match="give --params"):
        prefill_flops(bare, 16)
    assert prefill_flops(bare, 16, active_params=7e9) > 2 * 7e9 * 16


def test_the_rate_comes_from_the_user_then_a_measurement_then_the_datasheet():
    matmul = [{"status": "ok", "run_id": 3, "params": {"dtype": "bf16", "m": 8192, "k": 8192, "n": 8192},
               "extra": {"tflops": 702.5}}]
    assert compute_rate(matmul, ["NVIDIA H200"], 500.0, None).kind == "given"
    measured = compute_rate(matmul, ["NVIDIA H200"], None, None)
    assert measured.kind == "measured" and measured.tflops == 702.5 and "run 3" in measured.source
    spec = compute_rate([], ["NVIDIA H200"], None, None)
    assert spec.kind == "spec" and spec.tflops == 989 and spec.source.startswith("spec: NVIDIA H200")
    assert compute_rate([], [], None, "B200").tflops == 2250
    assert compute_rate([], [], None, None) is None


def test_break_even_is_the_first_token_count_from_which_restoring_wins():
    # restore: 1 ms per token; recompute: 0.1 ms per token + 1e-4 ms per token² → equal at 9000 tokens
    assert break_even(lambda n: 1e-3 * n, lambda n: 1e-4 * n + 1e-7 * n * n) == 9001
    assert break_even(lambda n: 1e-5 * n, lambda n: 1e-4 * n) == 1
    assert break_even(lambda n: 1.0 * n, lambda n: 1e-9 * n) is None


def test_decide_says_which_is_faster_tier_by_tier():
    llama = get_model("Llama-3.1-70B")
    kv = llama.kv_bytes(8192, "bf16")
    tiers = [TierPlan("DRAM → GPU", kv, 63.0, kv / 63e9, 50.0, kv / 50e9, "gpu-batch", ""),
             TierPlan("file → GPU", kv, 14.0, kv / 14e9, None, None, None, "no measurement")]
    answer = decide(llama, 8192, "bf16", 1, tiers, ComputeRate(989.0, "spec", "spec"))
    assert answer.recompute["seconds"] == pytest.approx(prefill_flops(llama, 8192) / (989e12 * 0.5))
    assert answer.tiers[0].faster == "restore" and answer.tiers[0].break_even_tokens == 1
    assert answer.tiers[1].faster is None  # nothing measured: no verdict from a spec figure
    assert decide(llama, 8192, "bf16", 1, tiers, None).recompute is None


def test_a_tier_that_does_not_end_in_gpu_memory_is_a_leg_never_set_against_recomputing():
    llama = get_model("Llama-3.1-70B")
    kv = llama.kv_bytes(8192, "bf16")
    tiers = [TierPlan("DRAM → DRAM", kv, None, None, 9.0, kv / 9e9, "host", ""),
             TierPlan("file → DRAM (pinned staging) → GPU", kv, 14.0, kv / 14e9, 10.0, kv / 10e9, "staged", "")]
    answer = decide(llama, 8192, "bf16", 1, tiers, ComputeRate(989.0, "spec", "spec"))
    leg, staged = answer.tiers
    assert leg.faster is None and leg.break_even_tokens is None and "a leg, not a restore option" in leg.note
    assert staged.faster is not None and "leg" not in staged.note
    assert "a leg" in decide(llama, 8192, "bf16", 1, tiers, None).tiers[0].note


@pytest.mark.parametrize("request_tokens,kept", [(16384, True), (4096, False)])
def test_a_request_longer_than_the_whole_restore_is_explained_or_left_out(request_tokens, kept):
    llama = get_model("Llama-3.1-70B")
    kv = llama.kv_bytes(8192, "bf16")
    request = {"p50": 900.0, "p99": 2000.0, "tokens": request_tokens}  # the whole restore takes ~54 ms
    tiers = [TierPlan("DRAM → GPU", kv, 63.0, kv / 63e9, 50.0, kv / 50e9, "ce-batch", "", request_ms=request)]
    (tier,) = decide(llama, 8192, "bf16", 1, tiers, ComputeRate(989.0, "spec", "spec")).tiers
    if kept:
        assert tier.request_ms == request and f"each measured request moved {request_tokens} tokens" in tier.note
    else:
        assert tier.request_ms is None and "request time left out" in tier.note
