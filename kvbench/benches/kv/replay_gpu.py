"""`kv.replay` into HBM: the window's restores gathered from a page_first pool in pinned host DRAM into
a layer_first destination in GPU memory by a CUDA strategy (kvbench/executors/cuda_kv.py), one
fragment per engine block, layer and tensor — the DRAM → HBM leg `kvbench replay` prices a `dram` hit
with. Each chunk ends in a stream synchronize (a request's time is on the host clock, copies done);
its check copies the destination back once and compares every fragment with the source and every
other byte, the guard margins' included, with the poison (kvbench/memory/guard.py)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module
from kvbench.errors import IntegrityError
from kvbench.executors.registry import get_executor
from kvbench.kv.check import first_mismatch
from kvbench.kv.layouts import KVShape, region_bytes, restore_descriptors
from kvbench.kv.strategies import CUDA, is_ceiling
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.pattern import POISON, fill_pattern, poison

STRATEGIES = tuple(s for s in CUDA if not is_ceiling(s))  # a gather of fragments, never one contiguous piece


def on_gpu(params: dict[str, Any]) -> bool:
    return parse_kind(params["dst"]).name == "device"


def unavailable_reason(params: dict[str, Any]) -> str | None:
    if parse_kind(params["src"]).name != "pinned":
        return f"dst={params['dst']}: kv.replay restores into HBM from src=pinned (found src={params['src']})"
    if params["strategy"] not in STRATEGIES:
        return f"dst={params['dst']}: strategy {params['strategy']} is no CUDA gather ({', '.join(STRATEGIES)})"
    return cuda_unavailable_reason() or get_executor(params["strategy"]).unavailable_reason()


def cuda_reason() -> str | None:
    """Why this host cannot move bytes into HBM (None: it can)."""
    return cuda_unavailable_reason()


def default_strategy() -> str:
    """The gather `replay --execute` moves a window into HBM with: one batched copy of a chunk's fragments
    (ce-batch) where this driver has cudaMemcpyBatchAsync, else the fragments' copies captured in a CUDA
    graph (ce-graph)."""
    return "ce-batch" if get_executor("ce-batch").unavailable_reason() is None else "ce-graph"


def gpu_index(params: dict[str, Any]) -> int:
    return parse_kind(params["dst"]).index or 0


class DevicePool:
    """The pool in pinned host DRAM, the destination in GPU memory (guarded); `chunk` and `reset` as
    kv.replay's host pools have them."""

    def __init__(self, stack: ExitStack, params: dict[str, Any], shape: KVShape, pool_blocks: int, dest_blocks: int):
        self.params, self.shape, self.pool_blocks = params, shape, pool_blocks
        self.src = stack.enter_context(allocate("pinned", region_bytes("page_first", shape, pool_blocks)))
        poison(self.src.host_array)  # then the pattern: a byte the fill missed keeps the poison the check refuses
        fill_pattern(self.src.host_array, seed=1)
        self.guarded = stack.enter_context(GuardedRegion(params["dst"], region_bytes("layer_first", shape,
                                                                                     dest_blocks)))
        self.dst = self.guarded.region
        self.stream = cupy_module().cuda.Stream(non_blocking=True)
        stack.callback(self.stream.synchronize)  # nothing in flight when the buffers go
        self.margins = self.guarded.guards()  # the bytes around the destination, whatever a window wrote in it
        self.moves = 0  # chunks moved since the last reset

    def chunk(self, slots: np.ndarray, _dst: Any = None) -> tuple[Any, Any]:
        rows = restore_descriptors(self.shape, "page_first", "layer_first", slots, self.pool_blocks)
        copy = get_executor(self.params["strategy"]).bind(self.src, self.dst, rows, stream=self.stream)
        stream, guarded, guards = self.stream, self.guarded, self.guarded.guards(rows.dst_offset, rows.length)

        def move() -> None:
            copy()
            stream.synchronize()
            self.moves += 1

        def check() -> None:
            """This chunk's fragments against the source; after this chunk alone (moved on a poisoned
            destination) every other byte against the poison, after a whole window the margins."""
            stream.synchronize()
            whole = guarded.host_bytes()
            bad = first_mismatch(rows, self.src.host_array, guarded.inner(whole), POISON)
            if bad is not None:
                raise IntegrityError(f"{self.params['strategy']}: descriptor {bad} of {len(rows)} landed wrong on "
                                     "the GPU")
            guarded.check(whole, guards if self.moves == 1 else self.margins)

        return move, check

    def reset(self, _dst: Any = None) -> None:
        self.stream.synchronize()
        self.guarded.poison()
        self.moves = 0

    def describe(self) -> dict[str, Any]:
        return {"src": self.src.describe(), "dst": self.dst.describe(), "gpu": gpu_index(self.params),
                **getattr(get_executor(self.params["strategy"]), "facts", dict)()}
