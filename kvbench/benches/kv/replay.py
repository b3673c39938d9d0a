"""`kv.replay`: a window of a serving trace's restores executed for real (docs/replay.md, "Executed").

Each request of the window restores the blocks a cache that never evicts would serve it (every hash
block seen earlier in the trace, from its first up to the first new one), in the model's paged
layout: `block_tokens`-token engine blocks gathered from a page_first pool in host DRAM into a
layer_first destination, one fragment per engine block, layer and tensor — what `kvbench replay`
prices with the kv.restore DRAM → DRAM fit. Engine block j of hash block h sits in pool slot
(h × engine blocks per hash block + j) mod pool blocks: the pool holds `pool` bytes, not the whole
trace. A request larger than the destination is gathered in chunks, timed back to back.

With `src=file` the pool is a file (written once, flushed from the page cache, opened O_DIRECT): each
chunk's engine blocks are read run by run of consecutive slots into a DRAM staging buffer, then
gathered into the destination — the file → DRAM and DRAM → DRAM legs `replay` prices an `nvme` hit
with. Every block read is checked against what the file holds, and every gathered byte.

With `dst=device` (and `src=pinned`, a CUDA `strategy`) the destination is in GPU memory: the DRAM →
HBM leg a `dram` hit is priced with (kvbench/benches/kv/replay_gpu.py); without CUDA the case is
skipped with the reason.

One operation is the whole window; each request's time is recorded too (`replay_request_s`: the
median over every pass of the window). Verification runs every chunk of every request on a poisoned
destination and checks every byte it moved.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.benches.base import Benchmark, Prepared, prepared_on_gpu
from kvbench.benches.kv import replay_gpu
from kvbench.benches.declared import KV_REPLAY
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch
from kvbench.kv.geometry import get_model
from kvbench.kv.layouts import KVShape, region_bytes, restore_descriptors
from kvbench.kv.trace import prefix_hits, read_trace
from kvbench.measure.engine import Workload
from kvbench.memory.files import check_directory, create_files
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import POISON, fill_pattern, poison

REQUEST_S = "replay_request_s"  # extra: each window request's restore seconds (median over passes)


def window_plan(params: dict[str, Any]) -> tuple[Any, KVShape, list[tuple[int, int, np.ndarray]]]:
    """(trace, shape, [(request index, hit tokens, pool slots of its engine blocks)]) of the window's
    requests that restore anything."""
    trace = read_trace(params["trace"], params["trace_block_tokens"])
    if params["start"] >= trace.requests:
        raise BadInput(f"bad start={params['start']}: the trace has {trace.requests} requests")
    bt, per_hash = params["block_tokens"], params["trace_block_tokens"] // params["block_tokens"]
    if params["trace_block_tokens"] % bt:
        raise BadInput(f"bad block_tokens={bt}: it must divide trace_block_tokens={params['trace_block_tokens']}")
    shape = KVShape.of(get_model(params["model"]), bt, params["dtype"], params["tp"])
    pool_blocks = max(1, params["pool"] // shape.block_bytes)
    _, tokens = prefix_hits(trace)
    plan = []
    for r in range(params["start"], min(params["start"] + params["requests"], trace.requests)):
        engine = -(-int(tokens[r]) // bt)
        if engine:
            hashes = trace.blocks[trace.offsets[r]:trace.offsets[r] + -(-engine // per_hash)]
            j = np.arange(engine, dtype=np.int64)
            plan.append((r, int(tokens[r]), (hashes[j // per_hash] * per_hash + j % per_hash) % pool_blocks))
    if not plan:
        raise BadInput(f"requests {params['start']}..{params['start'] + params['requests'] - 1} of the trace restore "
                       "nothing (no block seen before): choose another start=")
    return trace, shape, plan


@register
class KVReplay(Benchmark):
    id = "kv.replay"
    description = "a window of a serving trace's KV restores, gathered in the model's paged layout (bytes once)"
    params = KV_REPLAY  # kvbench/benches/declared.py

    def validate(self, params: dict[str, Any]) -> None:
        _, shape, _ = window_plan(params)
        if shape.block_bytes > min(params["pool"], params["dest"]):
            raise BadInput(f"bad pool= or dest=: one engine block is {shape.block_bytes} bytes")
        from_file = params["src"] == "file"
        if from_file and shape.block_bytes % 4096:
            raise BadInput(f"bad block_tokens={params['block_tokens']} with src=file: an engine block of "
                           f"{shape.block_bytes} bytes is no multiple of 4096 (O_DIRECT reads whole pages)")
        if from_file:
            check_directory(params["path"] or tempfile.gettempdir(), params["pool"])
        host_dest = 0 if replay_gpu.on_gpu(params) else params["dest"]
        check_fits((0 if from_file else params["pool"]) + host_dest * (2 if from_file else 1),
                   "KV replay source pool (or staging) + destination")

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        if replay_gpu.on_gpu(params):
            return replay_gpu.unavailable_reason(params)
        if params["strategy"] in replay_gpu.STRATEGIES:
            return f"strategy {params['strategy']} gathers into GPU memory: give dst=device and src=pinned"
        for key in ("src", "dst"):
            if not params[key].startswith(("pageable", "numa")) and not (key == "src" and params[key] == "file"):
                return f"{key}={params[key]}: kv.replay gathers host memory (or reads its pool from a file)"
        return None

    def path(self, params: dict[str, Any]) -> list[Segment]:
        if replay_gpu.on_gpu(params):
            return [("dram_read",), ("gpu_link", replay_gpu.gpu_index(params))]
        return [("dram_copy",)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        if replay_gpu.on_gpu(params):
            return prepared_on_gpu(replay_gpu.gpu_index(params), lambda: self._prepare(params))
        return self._prepare(params)

    def _prepare(self, params: dict[str, Any]) -> Prepared:
        trace, shape, plan = window_plan(params)
        pool_blocks = max(1, params["pool"] // shape.block_bytes)
        dest_blocks = max(1, params["dest"] // shape.block_bytes)
        with ExitStack() as stack:
            if replay_gpu.on_gpu(params):
                source: Any = replay_gpu.DevicePool(stack, params, shape, pool_blocks, dest_blocks)
                dst = source.dst
            else:
                dst = stack.enter_context(allocate(params["dst"], region_bytes("layer_first", shape, dest_blocks)))
                source = (_FilePool(stack, params, shape, pool_blocks, dest_blocks) if params["src"] == "file"
                          else _DramPool(stack, params, shape, pool_blocks))
            requests = [[source.chunk(slots[at:at + dest_blocks], dst) for at in range(0, len(slots), dest_blocks)]
                        for _, _, slots in plan]
            cleanup = stack.pop_all()
        times: list[list[float]] = [[] for _ in requests]

        def run() -> None:
            for i, chunks in enumerate(requests):
                t0 = time.perf_counter_ns()
                for move, _ in chunks:
                    move()
                times[i].append((time.perf_counter_ns() - t0) * 1e-9)

        def verify() -> None:
            for chunks in requests:
                for move, check in chunks:
                    source.reset(dst)
                    move()
                    check()

        moved = sum(len(slots) for _, _, slots in plan) * shape.block_bytes
        workload = Workload(moved, run, lambda: source.reset(dst), requests[-1][-1][1], verify=verify)
        metadata = {"fragments": sum(len(slots) for _, _, slots in plan) * shape.units,
                    "fragment_bytes": shape.unit_bytes, "trace_sha256": trace.digest, "pool_blocks": pool_blocks,
                    "dest_blocks": dest_blocks, "buffers": {"dst": dst.describe(), **source.describe()}}
        if getattr(source, "warning", None):
            metadata["warning"] = source.warning

        def derive(_m) -> dict[str, Any]:
            return {REQUEST_S: [float(np.median(t)) if t else None for t in times],
                    "replay_requests": [r for r, _, _ in plan], "replay_tokens": [n for _, n, _ in plan]}

        return Prepared(workload, metadata, cleanup.close, derive)


def _checker(rows, src: np.ndarray, dst: np.ndarray):
    def check() -> None:
        bad = first_mismatch(rows, src, dst, POISON)
        if bad is not None:
            raise IntegrityError(f"descriptor {bad} of {len(rows)} landed wrong")

    return check


class _DramPool:
    """The pool in host DRAM (page_first): a chunk is one gather of its blocks into the destination."""

    def __init__(self, stack: ExitStack, params: dict[str, Any], shape: KVShape, pool_blocks: int):
        self.params, self.shape, self.pool_blocks = params, shape, pool_blocks
        self.src = stack.enter_context(allocate(params["src"], region_bytes("page_first", shape, pool_blocks)))
        poison(self.src.host_array)  # then the pattern: a byte the fill missed keeps the poison the check refuses
        fill_pattern(self.src.host_array, seed=1)

    def chunk(self, slots: np.ndarray, dst: Any) -> tuple[Any, Any]:
        rows = restore_descriptors(self.shape, "page_first", "layer_first", slots, self.pool_blocks)
        copy = get_executor(self.params["strategy"]).bind(self.src, dst, rows, self.params["concurrency"])
        return copy, _checker(rows, self.src.host_array, dst.host_array)

    def reset(self, dst: Any) -> None:
        poison(dst.host_array)

    def describe(self) -> dict[str, Any]:
        return {"src": self.src.describe()}


class _FilePool:
    """The pool in a file (page_first), read O_DIRECT run by run of consecutive slots into a DRAM staging
    buffer, then gathered into the destination: the two legs a file tier's restore crosses."""

    def __init__(self, stack: ExitStack, params: dict[str, Any], shape: KVShape, pool_blocks: int, dest_blocks: int):
        self.params, self.shape = params, shape
        self.files = stack.enter_context(create_files(params["path"] or None, 1, pool_blocks * shape.block_bytes,
                                                      direct=True, writable=False))
        self.fd = self.files.fds[0]
        self.staging = stack.enter_context(allocate("pageable", region_bytes("page_first", shape, dest_blocks)))
        self.view = memoryview(self.staging.host_array)
        if not self.files.direct:
            self.warning = (f"{self.files.mount.get('fstype')} refused O_DIRECT: the pool file's bytes came from "
                            "the page cache")

    def chunk(self, slots: np.ndarray, dst: Any) -> tuple[Any, Any]:
        bb, n = self.shape.block_bytes, len(slots)
        breaks = np.flatnonzero(np.diff(slots) != 1) + 1  # runs of consecutive slots: one read each
        runs = [(int(run[0]) * bb, self.view[int(at) * bb:(int(at) + len(run)) * bb])
                for at, run in zip(np.concatenate([[0], breaks]), np.split(slots, breaks), strict=True)]
        rows = restore_descriptors(self.shape, "page_first", "layer_first", np.arange(n, dtype=np.int64), n)
        gather = get_executor(self.params["strategy"]).bind(self.staging, dst, rows, self.params["concurrency"])
        fd = self.fd

        def move() -> None:
            for offset, buffer in runs:
                if os.preadv(fd, [buffer], offset) != len(buffer):
                    raise IntegrityError(f"short read of the pool file at {offset}")
            gather()

        def check() -> None:
            for i, slot in enumerate(slots):
                if not np.array_equal(self.staging.host_array[i * bb:(i + 1) * bb],
                                      self.files.expected(0, int(slot) * bb, bb)):
                    raise IntegrityError(f"engine block {i} read from the pool file differs from what it holds")
            _checker(rows, self.staging.host_array, dst.host_array)()

        return move, check

    def reset(self, dst: Any) -> None:
        poison(self.staging.host_array)
        poison(dst.host_array)
        if not self.files.direct:
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def describe(self) -> dict[str, Any]:
        return {"src": {"kind": "file", "direct": self.files.direct, **self.files.mount},
                "staging": self.staging.describe()}
