"""kv.restore from a target a launcher started (peer=remote, `python -m kvbench.cluster.peer` waiting for
initiators on 127.0.0.1): the pool asked for by size (OPEN:<bytes>), filled with the bytes the
check expects, refused with its reason when it cannot be allocated, and a target holding other
bytes fails the check."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from kvbench.backends.nixl import backend_unavailable_reason, make_agent
from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import fill_pattern
from kvbench.peers.initiator import RemotePeer
from kvbench.peers.protocol import PATTERN_SEED, expected_crc, fetch_metadata, fill_region, free_port
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)
OWN_SIZE = 65536  # the target's own buffer (--size), what a plain OPEN gets


def start_target(*extra: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    return subprocess.Popen([sys.executable, "-m", "kvbench.cluster.peer", "--name", "kvbench-target", "--port", str(port),
                             "--size", str(OWN_SIZE), "--timeout", "60", "--stay", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port


@pytest.fixture(scope="module")
def target():
    proc, port = start_target()
    try:
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=30)


def case(port: int, **params) -> Case:
    spec = get_bench("kv.restore")
    return Case("kv.restore", spec.canonical_params({"model": "Qwen2.5-32B", "tokens": 64, "strategy": "nixl",
                                                     "src": "remote", "peer": "remote", "peer_port": port,
                                                     "timeout_s": 120, **params}))


def test_the_target_fills_the_pool_with_the_bytes_the_check_expects():
    """kv/nixl.py's `expected` (fill_pattern, PATTERN_SEED) and the target's fill_region are one pattern."""
    size = 3 * 4096 + 24
    expected = np.full(size, 0xA5, dtype=np.uint8)
    fill_pattern(expected, seed=PATTERN_SEED)
    with allocate("pageable", size) as region:
        fill_region(region, PATTERN_SEED)
        assert np.array_equal(region.host_array, expected)


def test_open_asks_for_a_size_and_plain_open_keeps_the_target_s(target):
    for n, (ask, size) in enumerate(((True, 12288), (False, OWN_SIZE), (True, 40000))):
        agent = make_agent(f"kvbench-test-open-{n}", ["UCX"], listen_port=free_port())  # a case's agent each
        peer = RemotePeer(agent, "kvbench-target", "127.0.0.1", target, size, 60, ask=ask)
        try:
            assert peer.size == size and peer.mem_type == "DRAM"
            assert peer.crc() == expected_crc(size, PATTERN_SEED)  # filled as the check expects
        finally:
            peer.close()


def test_a_malformed_open_is_refused_with_the_reason(target):
    agent = make_agent("kvbench-test-bad-open", ["UCX"], listen_port=free_port())
    peer = RemotePeer.__new__(RemotePeer)  # the handshake by hand, to send what RemotePeer never would
    peer.initiator, peer.timeout_s, peer.name, peer.process, peer._inbox = agent, 60, "kvbench-target", None, []
    assert fetch_metadata(agent, "kvbench-target", "127.0.0.1", target, time.monotonic() + 60, send_own=True)
    agent.send_notif("kvbench-target", b"OPEN:lots")
    answer = peer._wait(lambda m: m.startswith((b"BASE:", b"REFUSED:")))
    agent.send_notif("kvbench-target", b"BYE")
    assert answer.startswith(b"REFUSED:") and b"bad OPEN:lots" in answer


@pytest.mark.parametrize("params", [{}, {"via": "pageable", "strategy": "host", "chunk": "8MiB"}])
def test_restore_from_a_launched_target_is_verified(facts, target, params):
    result = run_case(case(target, **params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    source = result.metadata["buffers"]["src"]
    assert source["peer"] == "remote" and source["address"] == f"127.0.0.1:{target}"
    assert source["size_bytes"] == 4 * result.metadata["blocks"] * 4 * 2**20  # the pool (4 MiB blocks), not --size
    assert get_bench("kv.restore").path(case(target, **params).params)[0] == ("remote_peer", "127.0.0.1")


def test_a_pool_the_target_cannot_hold_fails_the_case_with_its_reason_and_the_target_serves_on(facts, target,
                                                                                                  monkeypatch):
    """The target refuses (REFUSED:<reason>) a pool beyond 90 % of its free memory; this host must hold
    the pool's expected bytes for the check, so here the initiator asks for 4 TiB itself."""
    from kvbench.benches.kv import nixl

    def asks_too_much(agent, name, address, port, size, timeout_s, ask):
        return RemotePeer(agent, name, address, port, 1 << 42, timeout_s, ask)

    monkeypatch.setattr(nixl, "RemotePeer", asks_too_much)
    result = run_case(case(target), facts, FAST)
    assert result.status == "failed"
    assert f"refused a buffer of {1 << 42} bytes" in result.reason and "90%" in result.reason, result.reason
    monkeypatch.undo()
    assert run_case(case(target), facts, FAST).status == "ok"  # the same initiator name, served again


def test_a_target_holding_other_bytes_fails_the_check(facts):
    """The check is real: a pool whose bytes are not the pattern (another seed) fails the case."""
    proc, port = start_target("--seed", str(PATTERN_SEED + 1))
    try:
        result = run_case(case(port), facts, FAST)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert result.status == "failed" and "integrity check failed" in result.reason and "restored wrong" in result.reason
