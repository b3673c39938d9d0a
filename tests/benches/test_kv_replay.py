"""`kv.replay` through the runner: a hand-made trace's restores gathered, every byte checked, each
request's time recorded; a copy that does not happen fails."""

import pytest

from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.executors.host import HostExecutor
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from tests.replay_traces import write_tiny_trace

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)


@pytest.fixture
def trace(tmp_path):
    return write_tiny_trace(tmp_path)


def case(trace, **params):
    bench = get_bench("kv.replay")
    return Case("kv.replay", bench.canonical_params({
        "trace": trace, "trace_block_tokens": 4, "block_tokens": 2, "model": "Llama-3.1-8B", "start": 0,
        "requests": 3, "pool": "1MiB", "dest": "1MiB", **params}))


def test_a_windows_restores_are_gathered_checked_and_timed_per_request(facts, trace):
    result = run_case(case(trace), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert result.metadata["replay_requests"] == [1, 2]  # request 0 restores nothing
    assert result.metadata["replay_tokens"] == [8, 4]
    assert all(t > 0 for t in result.metadata["replay_request_s"])
    per_block = 2 * 32 * 2 * 2048  # 2 tokens × 32 layers × K and V × (8 heads × 128 × 2 bytes)
    assert result.measurement.bytes_per_op == (4 + 2) * per_block  # 8 and 4 tokens in 2-token blocks
    assert result.metadata["fragments"] >= 1


def test_a_small_destination_gathers_in_chunks(facts, trace):
    # a 2-token block of Llama-3.1-70B is 655,360 bytes: 1 MiB holds one, so each request goes block by block
    result = run_case(case(trace, model="Llama-3.1-70B"), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.metadata["dest_blocks"] == 1 and result.metadata["pool_blocks"] == 1
    assert result.measurement.bytes_per_op == 6 * 655360


def test_a_copy_that_does_not_happen_fails(facts, trace, monkeypatch):
    monkeypatch.setattr(HostExecutor, "bind", lambda self, *a, **k: (lambda: None))
    result = run_case(case(trace), facts, FAST)
    assert result.status == "failed"


def test_a_window_that_restores_nothing_is_refused(trace):
    bench = get_bench("kv.replay")
    with pytest.raises(BadInput, match="restore"):
        bench.validate(case(trace, requests=1).params)


def test_a_pool_in_a_file_is_read_then_gathered_every_block_checked(facts, trace, tmp_path):
    folder = tmp_path / "pool"
    folder.mkdir()
    result = run_case(case(trace, src="file", path=str(folder)), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert result.metadata["buffers"]["src"]["kind"] == "file"
    assert result.measurement.bytes_per_op == 6 * 2 * 32 * 2 * 2048
    assert list(folder.iterdir()) == []  # the pool file is removed with the case


def test_a_file_read_that_lands_wrong_fails(facts, trace, tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(os, "preadv", lambda fd, buffers, offset: sum(len(b) for b in buffers))  # reads nothing
    result = run_case(case(trace, src="file", path=str(tmp_path)), facts, FAST)
    assert result.status == "failed"


def test_into_hbm_on_a_host_without_cuda_is_skipped_with_its_reason(facts, trace, monkeypatch):
    import kvbench.benches.kv.replay_gpu as replay_gpu

    monkeypatch.setattr(replay_gpu, "cuda_unavailable_reason", lambda: "no CUDA device (test)")
    result = run_case(case(trace, src="pinned", dst="device", strategy="ce-batch"), facts, FAST)
    assert result.status == "skipped" and "no CUDA device (test)" in result.reason


@pytest.mark.parametrize(("params", "words"), [
    ({"src": "pageable", "dst": "device", "strategy": "ce-batch"}, "from src=pinned"),
    ({"src": "pinned", "dst": "device", "strategy": "host"}, "no CUDA gather"),
    ({"strategy": "ce-graph"}, "give dst=device and src=pinned"),
])
def test_a_gpu_case_that_cannot_run_says_why(trace, params, words):
    assert words in get_bench("kv.replay").case_unavailable_reason(case(trace, **params).params)
