"""`kv.replay` into HBM on the CUDA stand-in: a window's restores gathered from pinned host memory into
GPU memory by each CUDA gather strategy, every byte checked, each request's time recorded; a copy that
lands nothing fails. Bytes and calls, never a speed (the stand-in's numbers are no measurement)."""

import pytest

from kvbench.benches import get_bench
from kvbench.executors.registry import get_executor
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.test_standin import FAST
from tests.replay_traces import write_tiny_trace


@pytest.fixture
def trace(tmp_path):
    return write_tiny_trace(tmp_path)


def replay_case(trace, **params):
    return Case("kv.replay", get_bench("kv.replay").canonical_params({
        "trace": trace, "trace_block_tokens": 4, "block_tokens": 2, "model": "Llama-3.1-8B", "start": 0,
        "requests": 3, "pool": "1MiB", "dest": "1MiB", "src": "pinned", "dst": "device", **params}))


@pytest.mark.parametrize("strategy", ["ce-batch", "ce-loop", "ce-graph", "sm-gather"])
def test_a_window_is_restored_into_hbm_every_byte_checked(standin, trace, strategy):
    result = run_case(replay_case(trace, strategy=strategy), host_facts(), FAST)
    if result.status == "skipped":
        pytest.skip(result.reason)  # a strategy the stand-in does not offer
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert result.metadata["replay_requests"] == [1, 2] and result.metadata["replay_tokens"] == [8, 4]
    assert result.measurement.bytes_per_op == 6 * 2 * 32 * 2 * 2048
    assert result.metadata["buffers"]["dst"]["kind"].startswith("device")
    assert len(result.metadata["replay_request_s"]) == 2


def test_a_gpu_copy_that_lands_nothing_fails(standin, trace, monkeypatch):
    executor = type(get_executor("ce-batch"))
    monkeypatch.setattr(executor, "bind", lambda self, *a, **k: (lambda: None))
    result = run_case(replay_case(trace, strategy="ce-batch"), host_facts(), FAST)
    assert result.status == "failed"
