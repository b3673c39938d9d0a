"""`kv.handoff`: a model's KV for N tokens moved from a prefill GPU's paged pool into a decode GPU's
pool (P/D disaggregation inside one server), where the two engines differ in layout and block size
(vLLM's 16-token layer_first blocks into SGLang's 64-token page_first pages, by default).

Strategies (each fed the same end-to-end descriptor list, kvbench/kv/layouts.py `handoff_descriptors`):

* `gather-copy-scatter`: the kv_gather kernel packs the pieces into a staging buffer on the prefill
  GPU, one cudaMemcpyPeerAsync moves it to a staging buffer on the decode GPU, the same kernel there
  scatters it into the decode pool. Without peer-to-peer the driver stages the peer copy through host
  memory: the result says so.
* `peer-read`: one kv_gather launch on the decode GPU reads the prefill pool through peer access and
  writes the decode pool: gather, copy and scatter in one kernel (needs peer access).

Every handoff is checked byte for byte (kvbench/kv/check.py: each piece against the source pool,
every other byte of the decode pool and its guards against the poison). One whole handoff timed
alone, again and again, is the time it adds before the decode GPU can produce its first token
(`ttft_added_ms`). With one GPU the case skips with the reason.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.cuda import (
    cuda_unavailable_reason,
    cupy_module,
    device_count,
    hold,
    kernel_module,
    launch_shape,
    pci_bus_id,
    upload,
)
from kvbench.benches.base import Benchmark, Prepared, built_in_stack, prepared_on_gpu
from kvbench.benches.declared import KV_HANDOFF
from kvbench.benches.kv.case import layout_metadata, rates
from kvbench.benches.p2p import enable_peer_access, parse_pair, peer_access_reason, two_gpus_reason
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch, unfilled_note
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.geometry import get_model
from kvbench.kv.layouts import KVShape, handoff_descriptors, pick_blocks, region_bytes
from kvbench.measure.cuda_timer import AllGpusEventTimer, CudaEventTimer
from kvbench.measure.engine import Workload
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.pattern import POISON, fill_pattern, poison, poison_between_copies
from kvbench.metadata import REQUEST_MS, TTFT_ADDED_MS

REQUESTS = 30  # whole handoffs timed one by one after the samples (as kv.restore's requests)
DECODE_POOL_FACTOR = 2  # the decode pool holds other requests too: its other half must stay untouched


@register
class KVHandoff(Benchmark):
    id = "kv.handoff"
    description = "a model's KV moved from a prefill GPU's pool into a decode GPU's pool of another layout"
    params = KV_HANDOFF  # kvbench/benches/declared.py

    def _shapes(self, params: dict[str, Any]) -> tuple[KVShape, KVShape]:
        model = get_model(params["model"])
        return (KVShape.of(model, params["src_block_tokens"], params["dtype"], params["tp"]),
                KVShape.of(model, params["dst_block_tokens"], params["dtype"], params["tp"]))

    def _blocks(self, params: dict[str, Any]) -> tuple[int, int, int]:
        """(prefill blocks moved, prefill pool blocks, decode pool blocks)."""
        blocks = params["tokens"] // params["src_block_tokens"]
        return (blocks, params["pool_blocks"] or 4 * blocks,
                DECODE_POOL_FACTOR * (params["tokens"] // params["dst_block_tokens"]))

    def unavailable_reason(self) -> str | None:
        return cuda_unavailable_reason()

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        reason = two_gpus_reason("kv.handoff moves KV")
        if reason:
            return reason
        a, b = parse_pair(params["pair"])
        if params["strategy"] == "peer-read":
            return peer_access_reason(b, a, "strategy peer-read",
                                      "gather-copy-scatter's peer copy is staged through host memory")
        return None

    def validate(self, params: dict[str, Any]) -> None:
        a, b = parse_pair(params["pair"])
        tokens = params["tokens"]
        for key in ("src_block_tokens", "dst_block_tokens"):
            if tokens % params[key]:
                raise BadInput(f"bad tokens={tokens}: not a multiple of {key}={params[key]} (a handoff moves "
                               "whole blocks on both sides)")
        src, dst = self._shapes(params)
        blocks, pool, decode = self._blocks(params)
        if blocks > pool:
            raise BadInput(f"bad pool_blocks={pool}: too small for {blocks} blocks of {params['src_block_tokens']} "
                           "tokens")
        pool_bytes = region_bytes(params["src_layout"], src, pool)  # also refuses a layout this block size cannot use
        decode_bytes = region_bytes(params["dst_layout"], dst, decode)
        if cuda_unavailable_reason() or device_count() < 2:
            return  # the case skips with the reason
        moved = blocks * src.block_bytes
        staging = moved if params["strategy"] == "gather-copy-scatter" else 0
        check_gpu(a, pool_bytes + staging, f"pair={params['pair']} (the prefill pool)")
        check_gpu(b, decode_bytes + staging, f"pair={params['pair']} (the decode pool)")

    def path(self, params: dict[str, Any]) -> list[Segment]:
        a, b = parse_pair(params["pair"])
        return [("gpu_peer", a, b)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        a, b = parse_pair(params["pair"])
        src, dst = self._shapes(params)
        blocks, pool, decode = self._blocks(params)
        picked = pick_blocks(blocks, pool, params["selection"], params["seed"])
        rows = handoff_descriptors(src, dst, params["src_layout"], params["dst_layout"], picked, pool, decode)
        sizes = (region_bytes(params["src_layout"], src, pool), region_bytes(params["dst_layout"], dst, decode))
        piece = int(np.gcd(src.block_tokens, dst.block_tokens)) * src.token_unit_bytes
        layout = {**layout_metadata(src, blocks, pool, len(rows), params["selection"]), "fragment_bytes": piece,
                  "decode_pool_blocks": decode}
        return prepared_on_gpu(b, lambda: built_in_stack(
            lambda stack: _build(params, a, b, rows, sizes, layout, stack)))


def _build(params: dict[str, Any], a: int, b: int, rows: DescriptorList, sizes: tuple[int, int],
           layout: dict[str, Any], stack: ExitStack) -> Prepared:
    from kvbench.hardware.nvlink import pair_link

    cp = cupy_module()
    gcs = params["strategy"] == "gather-copy-scatter"
    # peer-read: the decode GPU reads the prefill pool; the peer copy goes direct where it may
    peer = {f"{b}->{a}": enable_peer_access(b, a), f"{a}->{b}": enable_peer_access(a, b)}
    source_host = np.empty(sizes[0], dtype=np.uint8)
    poison(source_host)  # then the pattern: a source byte the fill missed keeps the poison the check refuses
    fill_pattern(source_host, seed=params["seed"] + 1)
    source = upload(source_host, a)  # landed before GPU b's stream reads it (peer-read)
    hold(stack, source)  # the launches keep its address only: the array must outlive them
    with cp.cuda.Device(a):
        stream_a = cp.cuda.Stream(non_blocking=True)
    guarded = stack.enter_context(GuardedRegion(f"device:{b}", sizes[1], rows.dst_offset, rows.length))
    with cp.cuda.Device(b):
        stream_b = cp.cuda.Stream(non_blocking=True)
    for gpu in (a, b):
        stack.callback(cp.cuda.Device(gpu).synchronize)  # nothing in flight when the buffers go
    target = int(guarded.region.device_array.data.ptr)
    reset = guarded.poison
    if gcs:
        run, fragments = _gather_copy_scatter(rows, a, b, source, target, stream_a, stream_b)
        timer = AllGpusEventTimer({a: stream_a, b: stream_b})
        staging_a, staging_b = run.keepalive[:2]

        def reset() -> None:  # the staging too: a gather or copy that stops must not pass on stale bytes
            poison_between_copies(a, staging_a)
            poison_between_copies(b, staging_b)
            guarded.poison()
    else:
        run, fragments = _launcher(b, int(source.data.ptr), target, rows, stream_b), len(rows)
        timer = CudaEventTimer(stream_b, b)

    def check() -> None:
        for stream in (stream_a, stream_b):
            stream.synchronize()
        whole = guarded.host_bytes()
        row = first_mismatch(rows, source_host, guarded.inner(whole), POISON)
        if row is not None:
            raise IntegrityError(f"kv.handoff {params['strategy']}: piece {row} of {len(rows)} landed wrong in GPU "
                                 f"{b}'s decode pool{unfilled_note(rows, source_host, row, POISON)}")
        guarded.check(whole)

    def derive(m) -> dict[str, Any]:
        request = m.request_ms()
        added = None if request is None else {
            **{k: request[k] for k in ("p50", "p99") if k in request}, "tokens": params["tokens"],
            "basis": "one whole handoff timed alone (request_ms): the decode GPU's first token waits for it"}
        return {**rates(params["tokens"], fragments, m), REQUEST_MS: request, TTFT_ADDED_MS: added}

    link = pair_link(pci_bus_id(a), pci_bus_id(b), a, b)
    metadata = {**layout, "fragments": fragments, "pair": f"{a}-{b}", "strategy": params["strategy"],
                "peer_access": peer, "peer_link": link, "timer": timer.name,
                "buffers": {"src": f"device:{a} ({sizes[0]} bytes)", "dst": f"device:{b} ({sizes[1]} bytes)"}}
    if link.get("kind") == "none":
        metadata["warning"] = f"GPU {a} and GPU {b}: {link['note']}"
    workload = Workload(rows.total_bytes, run, reset, check, timer, requests=REQUESTS)
    return Prepared(workload, metadata, derive=derive)


def _launcher(gpu: int, src_ptr: int, dst_ptr: int, rows: DescriptorList, stream):
    """One kv_gather launch on `gpu` applying `rows` (pointers may be a peer's, with access enabled)."""
    cp = cupy_module()
    kernel = kernel_module("kv_gather", gpu).get_function("kv_gather")
    offsets = tuple(upload(np.ascontiguousarray(a).astype(np.uint64), gpu)
                    for a in (rows.src_offset, rows.dst_offset, rows.length))
    grid, block = launch_shape(gpu, 256)
    args = (cp.uint64(src_ptr), cp.uint64(dst_ptr), *offsets, cp.uint64(len(rows)))

    def launch() -> None:
        with cp.cuda.Device(gpu):
            kernel((grid,), (block,), args, stream=stream)

    launch.keepalive = offsets  # type: ignore[attr-defined]
    return launch


def _gather_copy_scatter(rows: DescriptorList, a: int, b: int, source, target: int, stream_a, stream_b):
    """Gather into staging on GPU a, one peer copy to staging on GPU b, scatter there. Events order the
    two streams: b scatters after the copy lands, and a's next copy waits until b's scatter has read
    the staging buffer (operations run back to back in a sample)."""
    cp = cupy_module()
    total = rows.total_bytes
    staged = np.concatenate(([0], np.cumsum(rows.length)[:-1])).astype(np.uint64)  # pieces back to back
    gather = DescriptorList.from_arrays(rows.src_offset, staged, rows.length).coalesce()
    scatter = DescriptorList.from_arrays(staged, rows.dst_offset, rows.length).coalesce()
    with cp.cuda.Device(a):
        staging_a = cp.empty(total, dtype=cp.uint8)
        landed = cp.cuda.Event(disable_timing=True)
    with cp.cuda.Device(b):
        staging_b = cp.empty(total, dtype=cp.uint8)
        read = cp.cuda.Event(disable_timing=True)
    pack = _launcher(a, int(source.data.ptr), int(staging_a.data.ptr), gather, stream_a)
    unpack = _launcher(b, int(staging_b.data.ptr), target, scatter, stream_b)

    def run() -> None:  # enqueues only: the timer (or the check) waits for both GPUs
        pack()
        with cp.cuda.Device(a):
            stream_a.wait_event(read)  # b has read the staging of the previous handoff
            cp.cuda.runtime.memcpyPeerAsync(staging_b.data.ptr, b, staging_a.data.ptr, a, total, stream_a.ptr)
            landed.record(stream_a)
        with cp.cuda.Device(b):
            stream_b.wait_event(landed)
            unpack()
            read.record(stream_b)

    run.keepalive = (staging_a, staging_b, pack, unpack)  # type: ignore[attr-defined]
    return run, len(gather) + 1 + len(scatter)
