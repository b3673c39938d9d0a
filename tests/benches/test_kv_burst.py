"""kv.restore in bursts (kvbench/benches/kv/burst.py): R requests, each its own block table, posted at
once, pulled from or pushed into a peer's memory (an agent in this process: peer=inproc), every request
checked, each request's latency recorded, beside the wire ceiling (the same bytes as one descriptor)."""

from __future__ import annotations

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
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
