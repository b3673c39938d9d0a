"""KV handoff in bursts, the disaggregated-serving workload: `kv.restore src=remote strategy=nixl` with
`requests=R` (1 to 64) and `mode=pull|push`.

Prefill → decode transfers arrive as bursts of requests. Each request is its own list of fragments: the
model's real layout (`src_layout` pool → `dst_layout` slots) for its own random block table (the case's
`seed` plus the request's index), one NIXL request per 8,192 fragments. One operation posts all R
requests at once and ends when the last is done; each request's latency is from the burst's post to
its own completion, and `request_ms` holds their p50/p90/p99/max over every burst the case ran (its
warm-up and checks too; `n` counts them).

`pull`: this side (decode) reads the fragments from the pool its peer holds, into its own slots
(`dst` memory kind). `push`: this side (prefill) holds the pool (`dst` memory kind) and writes the
fragments into a buffer of R requests' slots its peer allocates (OPEN:<bytes>); the peer's checksum
of that buffer (after a reset to the poison) must equal the one this side computes.

The wire ceiling: the same bytes as one descriptor (`src_layout=contiguous dst_layout=contiguous`),
timed interleaved with the burst (A B B A), so `paired.median` is the burst's fraction of the wire
ceiling, measured, not divided. The peer's pool holds at least R requests' blocks for it
(pool_blocks, default: 4 × one request's blocks, or R × them when that is more).
"""

from __future__ import annotations

import os
import socket
import time
import zlib
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.nixl import PreparedTransfer, desc_array, make_agent
from kvbench.benches.base import Prepared
from kvbench.benches.kv.case import KVCase, rates
from kvbench.errors import BadInput, IntegrityError
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.layouts import pick_blocks, restore_descriptors
from kvbench.measure.engine import Pair, Workload
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import allocate
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import POISON, fill_pattern
from kvbench.metadata import REQUEST_MS
from kvbench.peers.initiator import InprocPeer, ProcessPeer, RemotePeer
from kvbench.peers.protocol import PATTERN_SEED, on_free_port

MAX_REQUESTS = 64
REQUEST_ROWS = 8192  # fragments per NIXL request, as the nixl executor posts them
BULK = {"src_layout": "contiguous", "dst_layout": "contiguous"}  # the wire ceiling's parameters
LOCAL_SEED = 23  # the pattern of a pushing side's pool (the peer's is PATTERN_SEED)


def wanted(params: dict[str, Any]) -> bool:
    """Whether a kv.restore case is a burst (more than one request, or pushed)."""
    return int(params.get("requests", 1)) > 1 or params.get("mode", "pull") == "push"


def check_params(params: dict[str, Any]) -> None:
    if params["src"] != "remote" or params["strategy"] != "nixl" or params["via"] != "none":
        raise BadInput(f"bad requests={params['requests']} mode={params['mode']}: bursts of requests run from a "
                       "peer's pool (src=remote strategy=nixl, via=none)")
    if params["requests"] > MAX_REQUESTS:
        raise BadInput(f"bad requests={params['requests']}: at most {MAX_REQUESTS} concurrent requests per pair")


def pool_blocks(params: dict[str, Any], blocks: int) -> int:
    """The peer's pool: the given pool_blocks, else 4 × one request's blocks or R × them when that is more
    (the wire ceiling reads R requests' bytes from it as one descriptor)."""
    return params["pool_blocks"] or max(4 * blocks, params["requests"] * blocks)


def burst_descriptors(case: KVCase, pool: int) -> list[DescriptorList]:
    """Each request's fragments: its own random block table (seed + request index), into its own slots."""
    params, blocks = case.params, params_blocks(case.params)
    out = []
    for i in range(params["requests"]):
        picked = pick_blocks(blocks, pool, "random" if params["selection"] == "random" else "sequential",
                             params["seed"] + i)
        d = restore_descriptors(case.shape, params["src_layout"], params["dst_layout"], picked, pool)
        out.append(DescriptorList.from_arrays(d.src_offset, d.dst_offset + np.uint64(i * case.moved_bytes), d.length))
    return out


def params_blocks(params: dict[str, Any]) -> int:
    return params["tokens"] // params["block_tokens"]


class Burst:
    """R requests posted at once; each request's latency (s) from the post to its own completion."""

    def __init__(self, requests: list[list[PreparedTransfer]], keep: int = 100_000) -> None:
        self.requests = requests
        self.latencies_s: list[float] = []
        self.keep = keep

    def __call__(self) -> None:
        started = time.perf_counter()
        for request in self.requests:
            for t in request:
                t.post()
        pending = {i: list(r) for i, r in enumerate(self.requests)}
        deadline = time.monotonic() + max(t.timeout_s for r in self.requests for t in r)
        while pending:
            for i in list(pending):
                left = [t for t in pending[i] if not _done(t)]
                if left:
                    pending[i] = left
                    continue
                del pending[i]
                if len(self.latencies_s) < self.keep:
                    self.latencies_s.append(time.perf_counter() - started)
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"NIXL transfer: {len(pending)} of {len(self.requests)} requests of the burst did "
                                   "not finish within the case's timeout_s")

    def request_ms(self) -> dict[str, float] | None:
        if not self.latencies_s:
            return None
        ms = np.asarray(self.latencies_s) * 1e3
        p50, p90, p99 = np.percentile(ms, [50, 90, 99])
        return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(ms.max()), "n": len(ms)}

    def close(self) -> None:
        for request in self.requests:
            for t in request:
                t.release()


def _done(t: PreparedTransfer) -> bool:
    """Whether a posted request is complete; its error raised as the nixl executor raises it."""
    if getattr(t, "_state", None) == "DONE":
        return True
    try:
        t._state = t.agent.check_xfer_state(t.handle)
    except Exception as exc:  # noqa: BLE001 - NIXL's own error types
        raise RuntimeError(f"NIXL transfer failed: {type(exc).__name__}: {exc}") from exc
    if t._state == "ERR":
        raise RuntimeError("NIXL transfer failed (state ERR): the peer or the backend reported an error")
    return t._state == "DONE"


def _transfers(agent, operation: str, local: np.ndarray, local_mem: str, remote: np.ndarray, remote_mem: str,
               peer: str, timeout_s: float) -> list[PreparedTransfer]:
    return [PreparedTransfer(agent, operation, local[s:s + REQUEST_ROWS], local_mem, remote[s:s + REQUEST_ROWS],
                             remote_mem, peer, ["UCX"], timeout_s=timeout_s) for s in range(0, len(local), REQUEST_ROWS)]


def _peer(params: dict[str, Any], stack: ExitStack, size: int):
    """This side's agent and the peer holding `size` bytes (its pool, or a push's slots)."""
    remote = params["peer"] == "remote"
    name = (f"kvbench-kvburst-{socket.gethostname()}-{os.getpid()}" if remote
            else f"kvbench-kvburst-{os.getpid()}-{id(stack)}")
    agent, listen = (on_free_port(lambda port: make_agent(name, ["UCX"], listen_port=port))
                     if params["peer"] != "inproc" else (make_agent(name, ["UCX"]), None))
    if params["peer"] == "inproc":
        peer = InprocPeer(agent, size, "pageable", PATTERN_SEED)
    elif remote:
        peer = RemotePeer(agent, params["peer_name"], params["peer_addr"], params["peer_port"], size,
                          params["timeout_s"], ask=True)
    else:
        peer = ProcessPeer(agent, listen, size, "pageable", PATTERN_SEED, params["timeout_s"])
    stack.callback(peer.close)
    return agent, peer


def prepare(case: KVCase) -> Prepared:
    params = case.params
    blocks, requests = params_blocks(params), params["requests"]
    pool = case.pool_bytes // case.shape.block_bytes
    parts = burst_descriptors(case, pool)
    every = DescriptorList.from_arrays(np.concatenate([d.src_offset for d in parts]),
                                       np.concatenate([d.dst_offset for d in parts]),
                                       np.concatenate([d.length for d in parts]))
    total = requests * case.moved_bytes
    if total > case.pool_bytes:
        raise BadInput(f"bad pool_blocks={pool}: the wire ceiling reads {requests} requests' {requests * blocks} "
                       "blocks from the pool as one descriptor; give at least that many (or leave pool_blocks 0)")
    push = params["mode"] == "push"
    with ExitStack() as stack:
        made = (_push if push else _pull)(case, parts, every, total, stack)
        cleanup = stack.pop_all()
    burst, workload, bulk, meta = made
    workload.pair = Pair(BULK, bulk)

    def derive(m) -> dict[str, Any]:
        return {**rates(params["tokens"] * requests, len(every), m), REQUEST_MS: burst.request_ms()}

    metadata = {**case.layout, **meta, "nixl_backend": "UCX", "requests": requests, "mode": params["mode"],
                "fragments": len(every), "request_fragments": len(parts[0])}
    return Prepared(workload, metadata, cleanup.close, derive)


def _pull(case: KVCase, parts: list[DescriptorList], every: DescriptorList, total: int, stack: ExitStack):
    """This side reads every request's fragments from the peer's pool into its own slots."""
    params = case.params
    expected = np.empty(case.pool_bytes, dtype=np.uint8)
    fill_pattern(expected, seed=PATTERN_SEED)  # what every peer's buffer holds (fill_region with PATTERN_SEED)
    guarded = stack.enter_context(GuardedRegion(params["dst"], total, every.dst_offset, every.length))
    dst = guarded.region
    agent, peer = _peer(params, stack, case.pool_bytes)
    mem_type, base, device = nixl_memory(dst)
    agent.register_memory(desc_array(np.array([base]), np.array([total]), device), mem_type)
    burst, bulk = _burst_and_bulk(stack, agent, peer, "READ", parts, (base, mem_type, device), total,
                                  params["timeout_s"])
    bulk_guards = guarded.guards(np.array([0], dtype=np.uint64), np.array([total], dtype=np.uint64))

    def check() -> None:
        whole = guarded.host_bytes()
        row = first_mismatch(every, expected, guarded.inner(whole), POISON)
        if row is not None:
            raise IntegrityError(f"fragment {row} of {len(every)} ({len(parts)} requests) restored wrong")
        guarded.check(whole)

    def bulk_check() -> None:
        whole = guarded.host_bytes()
        if not np.array_equal(guarded.inner(whole)[:total], expected[:total]):
            raise IntegrityError("the wire ceiling's one descriptor restored wrong")
        guarded.check(whole, bulk_guards)

    workload = Workload(total, burst, guarded.poison, check)
    bulk_workload = Workload(total, bulk.run, guarded.poison, bulk_check)
    return burst, workload, bulk_workload, {"buffers": {"dst": dst.describe(), "src": peer.describe()}}


def _push(case: KVCase, parts: list[DescriptorList], every: DescriptorList, total: int, stack: ExitStack):
    """This side writes every request's fragments from its own pool into slots its peer allocated."""
    params = case.params
    pool = allocate(params["dst"], case.pool_bytes)
    stack.callback(pool.close)
    local_bytes = pool.host_array if pool.host_array is not None else None
    if local_bytes is None:
        raise BadInput(f"bad dst={params['dst']} with mode=push: the pushing side's pool must be host memory here")
    fill_pattern(local_bytes, seed=LOCAL_SEED)
    agent, peer = _peer(params, stack, total)
    mem_type, base, device = nixl_memory(pool)
    agent.register_memory(desc_array(np.array([base]), np.array([case.pool_bytes]), device), mem_type)
    # what the peer's buffer holds after a reset (poison) and one burst: every slot a request writes
    after_burst = np.full(total, POISON, dtype=np.uint8)
    for s, d, n in zip(every.src_offset.tolist(), every.dst_offset.tolist(), every.length.tolist()):
        after_burst[d:d + n] = local_bytes[s:s + n]
    burst_crc, bulk_crc = zlib.crc32(memoryview(after_burst)), zlib.crc32(memoryview(local_bytes[:total]))
    burst, bulk = _burst_and_bulk(stack, agent, peer, "WRITE", parts, (base, mem_type, device), total,
                                  params["timeout_s"])

    def checked(want: int, what: str):
        def check() -> None:
            got = peer.crc()
            if got != want:
                raise IntegrityError(f"{what}: the peer's buffer has crc32 {got:#010x}, expected {want:#010x}")
        return check

    workload = Workload(total, burst, peer.poison, checked(burst_crc, f"{len(parts)} pushed requests"))
    bulk_workload = Workload(total, bulk.run, peer.poison, checked(bulk_crc, "the wire ceiling's one descriptor"))
    return burst, workload, bulk_workload, {"buffers": {"src": pool.describe(), "dst": peer.describe()}}


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    from kvbench.benches.kv import nixl

    return nixl.unavailable_reason(params, direction)


def path(params: dict[str, Any]):
    from kvbench.benches.kv import nixl

    return nixl.path(params)


def _burst_and_bulk(stack, agent, peer, op: str, parts, local: tuple, total: int, timeout_s: float):
    """(the burst, the bulk transfer) of one pair, both released when `stack` closes: each request's
    fragments between this side's buffer (`local` = base, memory type, device) and the peer's, and the
    same `total` bytes as one descriptor (the wire ceiling). READ pulls the peer's src offsets into this
    side's dst offsets; WRITE pushes this side's src offsets to the peer's dst offsets."""
    base, mem_type, device = local
    requests = []
    for d in parts:
        here, there = (d.dst_offset, d.src_offset) if op == "READ" else (d.src_offset, d.dst_offset)
        requests.append(_transfers(agent, op, desc_array(base + here, d.length, device), mem_type,
                                   desc_array(peer.base + there, d.length, peer.device), peer.mem_type, peer.name,
                                   timeout_s))
    burst = Burst(requests)
    stack.callback(burst.close)
    (bulk,) = _transfers(agent, op, desc_array(np.array([base]), np.array([total]), device), mem_type,
                         desc_array(np.array([peer.base]), np.array([total]), peer.device), peer.mem_type, peer.name,
                         timeout_s)
    stack.callback(bulk.release)
    return burst, bulk

