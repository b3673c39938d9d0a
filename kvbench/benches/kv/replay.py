"""`kv.replay`: a window of a serving trace's restores executed for real (docs/replay.md, "Executed").

Each request of the window restores the blocks a cache that never evicts would serve it (every hash
block seen earlier in the trace, from its first up to the first new one), in the model's paged
layout: `block_tokens`-token engine blocks gathered from a page_first pool in host DRAM into a
layer_first destination, one fragment per engine block, layer and tensor — what `kvbench replay`
prices with the kv.restore DRAM → DRAM fit. Engine block j of hash block h sits in pool slot
(h × engine blocks per hash block + j) mod pool blocks: the pool holds `pool` bytes, not the whole
trace. A request larger than the destination is gathered in chunks, timed back to back.

One operation is the whole window; each request's time is recorded too (`replay_request_s`: the
median over every pass of the window). Verification runs every chunk of every request on a poisoned
destination and checks every byte it moved.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.benches.base import Benchmark, Prepared
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
        check_fits(params["pool"] + params["dest"], "KV replay source pool + destination")

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        for key in ("src", "dst"):
            if not params[key].startswith(("pageable", "numa")):
                return f"{key}={params[key]}: kv.replay gathers host memory only"
        return None

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return [("dram_copy",)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        trace, shape, plan = window_plan(params)
        pool_blocks = max(1, params["pool"] // shape.block_bytes)
        dest_blocks = max(1, params["dest"] // shape.block_bytes)
        executor = get_executor(params["strategy"])
        with ExitStack() as stack:
            src = stack.enter_context(allocate(params["src"], region_bytes("page_first", shape, pool_blocks)))
            dst = stack.enter_context(allocate(params["dst"], region_bytes("layer_first", shape, dest_blocks)))
            poison(src.host_array)
            fill_pattern(src.host_array, seed=1)
            requests = []  # per request: [(descriptors, bound copy)] chunk by chunk
            for _, _, slots in plan:
                chunks = []
                for at in range(0, len(slots), dest_blocks):
                    rows = restore_descriptors(shape, "page_first", "layer_first", slots[at:at + dest_blocks],
                                               pool_blocks)
                    chunks.append((rows, executor.bind(src, dst, rows, params["concurrency"])))
                requests.append(chunks)
            cleanup = stack.pop_all()
        times: list[list[float]] = [[] for _ in requests]
        clock = __import__("time").perf_counter_ns

        def run() -> None:
            for i, chunks in enumerate(requests):
                t0 = clock()
                for _, copy in chunks:
                    copy()
                times[i].append((clock() - t0) * 1e-9)

        def check_rows(rows) -> None:
            bad = first_mismatch(rows, src.host_array, dst.host_array, POISON)
            if bad is not None:
                raise IntegrityError(f"descriptor {bad} of {len(rows)} landed wrong")

        def verify() -> None:
            for chunks in requests:
                for rows, copy in chunks:
                    poison(dst.host_array)
                    copy()
                    check_rows(rows)

        moved = sum(rows.total_bytes for chunks in requests for rows, _ in chunks)
        fragments = sum(len(rows) for chunks in requests for rows, _ in chunks)
        workload = Workload(moved, run, lambda: poison(dst.host_array), lambda: check_rows(requests[-1][-1][0]),
                            verify=verify)
        metadata = {"fragments": fragments, "fragment_bytes": shape.unit_bytes, "trace_sha256": trace.digest,
                    "pool_blocks": pool_blocks, "dest_blocks": dest_blocks,
                    "buffers": {"src": src.describe(), "dst": dst.describe()}}

        def derive(_m) -> dict[str, Any]:
            return {REQUEST_S: [float(np.median(t)) if t else None for t in times],
                    "replay_requests": [r for r, _, _ in plan], "replay_tokens": [n for _, n, _ in plan]}

        return Prepared(workload, metadata, cleanup.close, derive)
