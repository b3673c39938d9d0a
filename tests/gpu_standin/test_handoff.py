"""kv.handoff on the CUDA stand-in with two and eight simulated GPUs: each strategy moves a model's KV
from a prefill GPU's pool into a decode GPU's pool of another layout and block size, verified byte for
byte; each check fails when its copy does nothing or half; no peer-to-peer is said to be staged (and
the peer-reading kernel skips); one GPU skips with the reason. The stand-in proves bytes and call order
only: no time here is a measurement (docs/gpu-check.md)."""

import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.fixture import installed
from tests.gpu_standin.test_suites import TINY_MODEL

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)
STRATEGIES = ("gather-copy-scatter", "peer-read")


def run(**params):
    given = {"model": str(TINY_MODEL), "tokens": 128, **params}
    return run_case(Case("kv.handoff", get_bench("kv.handoff").canonical_params(given)), host_facts(), FAST)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_hands_vllm_blocks_to_sglang_pages_verified(standin_two_gpus, strategy):
    result = run(pair="0-1", strategy=strategy)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    meta = result.metadata
    assert meta["blocks"] == 128 // 16 and meta["decode_pool_blocks"] == 2 * 128 // 64
    assert meta["fragment_bytes"] == 16 * 128  # 16 tokens x 128 bytes per token and unit (the tiny model)
    assert meta["ttft_added_ms"]["tokens"] == 128 and meta["request_ms"]["n"] == 30
    assert meta["peer_link"]["kind"] == "nvlink"
    launches = standin_two_gpus.launches.get("kv_gather", 0)
    assert launches > 0  # gather and scatter, or the one peer-reading kernel


def test_a_pair_of_eight_gpus_and_every_layout_and_block_size_direction():
    with installed(gpus=8):
        for params in ({"pair": "7-2", "strategy": "peer-read"},
                       {"pair": "3-5", "src_layout": "page_first", "dst_layout": "layer_first",
                        "src_block_tokens": 64, "dst_block_tokens": 16},
                       {"pair": "6-0", "src_layout": "chunk", "dst_layout": "page_first", "dst_block_tokens": 32}):
            result = run(**params)
            assert result.status == "ok" and result.measurement.verified, (params, result.reason)


@pytest.mark.parametrize("strategy, kernel_or_copy", [("gather-copy-scatter", "kv_gather"),
                                                      ("gather-copy-scatter", "memcpy"),
                                                      ("peer-read", "kv_gather")])
@pytest.mark.parametrize("how", ["nothing", "half"])
@pytest.mark.parametrize("gpus", [2, 8])
def test_each_check_fails_when_its_copy_does_nothing_or_half(gpus, strategy, kernel_or_copy, how):
    with installed(gpus=gpus) as machine:
        machine.breakage[kernel_or_copy] = how
        result = run(pair=f"{gpus - 1}-0", strategy=strategy)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason
    assert "landed wrong in GPU 0's decode pool" in result.reason


def test_without_peer_to_peer_the_copy_is_said_to_be_staged_and_the_peer_kernel_skips(standin_two_gpus):
    standin_two_gpus.gpu_links = "none"
    staged = run(pair="1-0")
    assert staged.status == "ok" and staged.measurement.verified
    assert "staged through host memory" in staged.metadata["warning"]
    kernel = run(pair="1-0", strategy="peer-read")
    assert kernel.status == "skipped" and "GPU 0 cannot reach GPU 1's memory" in kernel.reason


def test_one_gpu_skips_with_the_reason(standin):
    result = run()
    assert result.status == "skipped" and "two GPUs; this host has 1" in result.reason


def test_tokens_that_are_not_whole_blocks_on_both_sides_are_one_line_naming_them():
    from kvbench.errors import BadInput

    bench = get_bench("kv.handoff")
    with pytest.raises(BadInput, match="bad tokens=48: not a multiple of dst_block_tokens=64"):
        bench.validate(bench.canonical_params({"model": str(TINY_MODEL), "tokens": 48}))


def test_a_peer_copy_that_stops_after_a_good_handoff_does_not_pass_on_stale_staging(standin_two_gpus):
    from kvbench.errors import IntegrityError

    bench = get_bench("kv.handoff")
    prepared = bench.prepare(bench.canonical_params({"model": str(TINY_MODEL), "tokens": 128}))
    try:
        w = prepared.workload
        w.reset()
        w.run()
        w.check()  # a good handoff: both staging buffers now hold the right bytes
        standin_two_gpus.breakage["memcpy"] = "nothing"  # the decode GPU's staging keeps the last handoff
        w.reset()
        w.run()
        with pytest.raises(IntegrityError, match="landed wrong"):
            w.check()
    finally:
        prepared.close()
