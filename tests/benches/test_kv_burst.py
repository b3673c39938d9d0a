"""kv.restore in bursts (kvbench/benches/kv/burst.py): R requests, each its own block table, posted at
once, pulled from or pushed into a peer's memory (an agent in this process: peer=inproc), every request
checked, each request's latency recorded, beside the wire ceiling (the same bytes as one descriptor)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)
BURST = {"src": "remote", "strategy": "nixl", "peer": "inproc", "model": "Llama-3.1-8B", "tokens": 32,
         "requests": 4}


def burst_case(**params) -> Case:
    spec = get_bench("kv.restore")
    canonical = spec.canonical_params({**BURST, **params})
    spec.validate(canonical)
    return Case("kv.restore", canonical)


@pytest.mark.parametrize("mode", ["pull", "push"])
def test_every_request_of_a_burst_is_verified_and_timed_beside_the_wire_ceiling(mode):
    result = run_case(burst_case(mode=mode), None, FAST)
    assert result.status == "ok" and result.measurement.verified, result.reason
    meta = result.metadata
    assert meta["requests"] == 4 and meta["mode"] == mode and meta["fragments"] == 4 * meta["request_fragments"]
    assert meta["request_ms"]["n"] >= 4 and 0 < meta["request_ms"]["p50"] <= meta["request_ms"]["p99"]
    assert result.measurement.bytes_per_op == 4 * meta["blocks"] * 2 * 2**20  # 4 requests of 2 blocks of 2 MiB
    assert result.measurement.paired.against == {"src_layout": "contiguous", "dst_layout": "contiguous"}
    assert result.measurement.paired.bytes_per_op == result.measurement.bytes_per_op


def test_each_request_has_its_own_block_table():
    from kvbench.benches.kv import burst
    from kvbench.benches.kv.case import KVCase
    from kvbench.kv.geometry import get_model
    from kvbench.kv.layouts import KVShape

    params = burst_case().params
    shape = KVShape.of(get_model("Llama-3.1-8B"), 16, "bf16", 1)
    case = KVCase(params, "restore", shape, None, 8 * shape.block_bytes, 2 * shape.block_bytes, {})
    parts = burst.burst_descriptors(case, 8)
    sources = [tuple(p.src_offset.tolist()) for p in parts]
    assert len(set(sources)) > 1  # seed + request index: not one table four times
    slots = sorted(int(o) for p in parts for o in p.dst_offset)
    assert slots == sorted(set(slots)) and max(slots) < 4 * 2 * shape.block_bytes  # each its own slots


@pytest.mark.parametrize("params,said", [
    ({"requests": 65}, "bad requests=65: at most 64 concurrent requests per pair"),
    ({"requests": 2, "src": "pageable", "strategy": "host"}, "bursts of requests run from a peer's pool"),
    ({"mode": "push", "via": "pageable", "strategy": "host"}, "bursts of requests run from a peer's pool"),
])
def test_a_burst_outside_a_peer_s_pool_is_refused_in_one_line(params, said):
    with pytest.raises(BadInput, match=said):
        burst_case(**params)


# Issue 58.2: a request other than the first broken at the seam where the burst's transfers are made
# (kvbench/benches/kv/burst.py `_burst_and_bulk`), pulled and pushed; the check covers every request.
def _dropped(parts, k):
    empty = np.zeros(0, dtype=np.uint64)
    return [DescriptorList.from_arrays(empty, empty, empty) if i == k else d for i, d in enumerate(parts)]


def _corrupted(parts, k):  # request k reads request k-1's blocks (its own random table is another)
    return [DescriptorList.from_arrays(parts[k - 1].src_offset, d.dst_offset, d.length) if i == k else d
            for i, d in enumerate(parts)]


def _reordered(parts, k):  # requests k-1 and k swap their slots: each request's bytes in the other's
    out = list(parts)
    a, b = parts[k - 1], parts[k]
    out[k - 1] = DescriptorList.from_arrays(a.src_offset, b.dst_offset, a.length)
    out[k] = DescriptorList.from_arrays(b.src_offset, a.dst_offset, b.length)
    return out


BREAKAGES = {"dropped": _dropped, "corrupted": _corrupted, "reordered": _reordered}


@pytest.mark.parametrize("mode", ["pull", "push"])
@pytest.mark.parametrize("breakage", BREAKAGES)
@pytest.mark.parametrize("k", [1, 3], ids=["second", "last"])
def test_a_burst_whose_later_request_is_dropped_corrupted_or_reordered_fails(monkeypatch, mode, breakage, k):
    from kvbench.benches.kv import burst

    real = burst._burst_and_bulk

    def broken(stack, agent, peer, op, parts, *args, **kwargs):
        return real(stack, agent, peer, op, BREAKAGES[breakage](parts, k), *args, **kwargs)

    monkeypatch.setattr(burst, "_burst_and_bulk", broken)
    result = run_case(burst_case(mode=mode), None, FAST)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason
    said = "restored wrong" if mode == "pull" else "4 pushed requests: the peer's buffer has crc32"
    assert said in result.reason, result.reason


class _Polled:
    """A posted request that answers DONE on its `polls`-th look (a stand-in for a PreparedTransfer)."""

    def __init__(self, polls: int) -> None:
        self.polls, self.seen, self.timeout_s, self.handle = polls, 0, 10.0, None
        self.agent = self

    def post(self) -> None:
        self.seen, self._state = 0, None

    def check_xfer_state(self, handle) -> str:
        self.seen += 1
        if self.seen >= self.polls:
            return "DONE"
        time.sleep(0.002)
        return "PROC"

    def release(self) -> None:
        pass


def test_each_request_s_latency_is_its_own_not_the_burst_s():
    from kvbench.benches.kv.burst import Burst

    burst = Burst([[_Polled(1)], [_Polled(3)], [_Polled(6)], [_Polled(10)]])
    for n in (1, 2):
        burst()
        assert len(burst.latencies_s) == 4 * n  # one latency per request, every burst
        first, *_, last = burst.latencies_s[-4:]
        assert burst.latencies_s[-4:] == sorted(burst.latencies_s[-4:]) and first < last  # each its own end
    assert burst.request_ms()["n"] == 8


@pytest.mark.parametrize("mode", ["pull", "push"])
def test_a_case_records_one_latency_per_request_of_every_burst(mode):
    result = run_case(burst_case(mode=mode), None, FAST)
    assert result.status == "ok", result.reason
    n = result.metadata["request_ms"]["n"]
    assert n >= 4 and n % 4 == 0  # every burst adds its 4 requests' latencies, never one
