"""`kv.restore` / `kv.offload` on host memory through the runner."""

import pytest

from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case, plan
from kvbench.plan.suite import BenchSweep
from kvbench.run.runner import run_case

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)


def case(bench="kv.restore", **params):
    return Case(bench, get_bench(bench).canonical_params({"model": "Qwen2.5-32B", "tokens": 256, **params}))


@pytest.mark.parametrize("bench", ["kv.restore", "kv.offload"])
@pytest.mark.parametrize("params", [
    {}, {"strategy": "host-numpy"}, {"concurrency": 2}, {"src_layout": "chunk", "dst_layout": "layer_first"},
    {"block_tokens": 1, "model": "DeepSeek-V3"}, {"dtype": "fp8", "tp": 2},
])
def test_restores_are_verified_and_report_kv_figures(facts, bench, params):
    result = run_case(case(bench, **params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    meta = result.metadata
    assert meta["tokens_per_s"] > 0 and meta["us_per_fragment"] > 0
    assert result.measurement.bytes_per_op == 256 * meta["model_bytes_per_token"]


def test_qwen_restore_has_128_fragments_per_block(facts):
    result = run_case(case(), facts, FAST)
    assert result.metadata["fragments"] == 16 * 128 and result.metadata["fragment_bytes"] == 32_768
    assert result.metadata["layout_fragments"] == 16 * 128


def test_contiguous_strategy_moves_the_same_bytes_in_one_piece(facts):
    frag = run_case(case(), facts, FAST)
    ceiling = run_case(case(strategy="contiguous"), facts, FAST)
    assert ceiling.status == "ok" and ceiling.measurement.verified
    assert ceiling.measurement.bytes_per_op == frag.measurement.bytes_per_op
    assert ceiling.metadata["fragments"] == 1 and ceiling.metadata["layout_fragments"] == 16 * 128


@pytest.mark.parametrize("params,message", [
    ({"tokens": 100}, "not a multiple of block_tokens=16"),
    ({"tp": 3}, "tp=3: it must divide"),
    ({"model": "gpt-5"}, "unknown model 'gpt-5'"),
    ({"pool_blocks": 4}, "too small for 16 blocks"),
    ({"block_tokens": 48, "tokens": 480, "src_layout": "chunk"}, "block_tokens dividing 256"),
])
def test_bad_kv_input_is_refused_before_running(params, message):
    with pytest.raises(BadInput, match=message):
        plan([BenchSweep(id="kv.restore", params={"model": "Qwen2.5-32B", "tokens": 256, **params})])


def test_gpu_memory_is_skipped_with_the_reason(facts):
    result = run_case(case(dst="device"), facts, FAST)
    assert result.status == "skipped" and "host memory only" in result.reason


def test_host_memory_is_checked_for_the_host_buffers_only(monkeypatch):
    import kvbench.memory.host as host
    from kvbench.memory.headroom import HostMemory

    # Llama-3.1-70B bf16: 320 KiB of KV per token, so 1024 tokens are 320 MiB moved, and a pool of
    # the same 64 blocks another 320 MiB; pretend 500 MiB are free on the host
    monkeypatch.setattr(host, "host_headroom", lambda: HostMemory(500 << 20, "test"))
    params = {"model": "Llama-3.1-70B", "tokens": 1024, "pool_blocks": 64, "src": "pinned"}
    with pytest.raises(BadInput, match="larger than 90% of the"):
        plan([BenchSweep(id="kv.restore", params={**params, "dst": "pageable"})])
    # into the GPU, only the pinned pool is host memory (the GPU's own check needs CUDA)
    assert plan([BenchSweep(id="kv.restore", params={**params, "dst": "device", "strategy": "ce-graph"})])


@pytest.mark.parametrize("bench", ["kv.restore", "kv.offload"])
def test_a_fragmented_strategy_measures_its_ratio_to_one_contiguous_copy_in_the_same_case(facts, bench):
    """The ceiling runs interleaved with the strategy, on the same buffers: the ratio is taken per
    pair of samples and recorded, not divided later between two cases timed apart."""
    result = run_case(case(bench), facts, FAST)
    assert result.status == "ok", result.reason
    row = result.to_row()["extra"]
    paired = row["paired"]
    assert paired["against"] == {"strategy": "contiguous"}
    assert paired["pairs"] == len(result.measurement.samples_s) == len(paired["ratios"])
    assert paired["p10"] <= paired["median"] <= paired["p90"] and paired["against_gbps"]["median"] > 0
    assert row["precision"]["samples"] == len(result.measurement.samples_s) and row["precision"]["stopped"]


def test_the_ceiling_itself_records_no_pair(facts):
    result = run_case(case(strategy="contiguous"), facts, FAST)
    assert result.status == "ok" and "paired" not in result.to_row()["extra"]


def test_a_ceiling_that_copies_nothing_fails_the_fragmented_case(facts, monkeypatch):
    """The pair's side is verified like the case itself: its bytes are checked before, during and after."""
    from kvbench.executors.host import ContiguousExecutor

    monkeypatch.setattr(ContiguousExecutor, "bind", lambda self, src, dst, descriptors, threads=1: lambda: None)
    result = run_case(case(), facts, FAST)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason
