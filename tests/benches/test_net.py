"""net.read / net.write over NIXL UCX: in one process and to a peer process, with faults."""

import sys

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.hardware.fingerprint import collect_facts
from kvbench.measure import Settings
from kvbench.net_peers import ProcessPeer
from kvbench.plan.cases import Case
from kvbench.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)


@pytest.fixture(scope="module")
def facts():
    return collect_facts(gpus=False, dram=False)


def case(bench, **params):
    spec = get_bench(bench)
    return Case(bench, spec.canonical_params({"block_size": "64KiB", "batch": 16, **params}))


@pytest.mark.parametrize("bench", ["net.write", "net.read"])
@pytest.mark.parametrize("peer", ["inproc", "local"])
def test_transfers_to_a_peer_are_verified(facts, bench, peer):
    result = run_case(case(bench, peer=peer), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.measurement.bytes_per_op == 16 * 65536
    assert result.metadata["nixl_backend"] == "UCX"
    assert result.metadata["buffers"]["remote"]["peer"] == peer


def test_gpu_memory_is_skipped_with_the_reason(facts):
    result = run_case(case("net.write", local="device"), facts, FAST)
    if result.status == "ok":
        pytest.skip("a GPU is present")
    assert result.status == "skipped" and "no CUDA device" in result.reason


def test_a_peer_that_never_answers_times_out_and_is_killed(facts, monkeypatch):
    monkeypatch.setattr(ProcessPeer, "command", [sys.executable, "-c", "import time; time.sleep(600)"])
    result = run_case(case("net.write", peer="local", timeout_s=2), facts, FAST)
    assert result.status == "failed" and "did not answer within 2 s" in result.reason


def test_a_peer_that_dies_mid_run_fails_the_case():
    bench = get_bench("net.read")
    prepared = bench.prepare(case("net.read", peer="local", timeout_s=5).params)
    try:
        prepared.workload.run()  # works while the peer lives
        pid = prepared.metadata["buffers"]["remote"]["pid"]
        import os
        import signal

        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="NIXL transfer failed|ERR|did not finish"):
            for _ in range(2000):  # UCX notices the dead endpoint within a few transfers
                prepared.workload.run()
    finally:
        prepared.close()
