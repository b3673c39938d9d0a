"""KV transfers between host buffers with the host executors (`host`, `host-numpy`, and the
`contiguous` ceiling), checked descriptor by descriptor against the source, and the destination's
guard bytes (its margins, the pool slots an offload did not select) checked unchanged.

A fragmented strategy is paired with the ceiling: one contiguous copy of the same bytes, between
the same buffers, timed interleaved with it in the same case, so its ratio to one contiguous copy
is measured per pair of samples (metadata `paired`), never divided between two cases timed apart.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from kvbench.benches.base import Prepared
from kvbench.benches.kv.case import KVCase, rates
from kvbench.errors import IntegrityError
from kvbench.executors.host import max_threads
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch, unfilled_note
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure.engine import Pair, Workload
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import POISON, fill_pattern, poison


CEILING = "contiguous"  # the executor a fragmented host strategy is paired with


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    for key in ("src", "dst"):
        if not params[key].startswith(("pageable", "numa")):
            return f"{key}={params[key]}: strategy '{params['strategy']}' moves host memory only"
    if params["concurrency"] > max_threads():
        return f"concurrency={params['concurrency']} but this host runs at most {max_threads()} copy threads"
    return None


def path(params: dict[str, Any]) -> list[Segment]:
    return [("dram_copy",)]


def prepare(case: KVCase) -> Prepared:
    params, executor = case.params, get_executor(case.params["strategy"])
    descriptors = case.descriptors
    src_bytes, dst_bytes = case.pool_bytes, case.moved_bytes
    if case.direction == "offload":  # the way back: from the blocks in use into the pool
        descriptors = DescriptorList.from_arrays(descriptors.dst_offset, descriptors.src_offset, descriptors.length)
        src_bytes, dst_bytes = dst_bytes, src_bytes
    if executor.ceiling:
        descriptors = DescriptorList.contiguous(descriptors.total_bytes)
    fragments = len(descriptors)  # what this strategy really submits: 1 for the ceiling
    with ExitStack() as stack:
        src = stack.enter_context(allocate(params["src"], src_bytes))
        guarded = stack.enter_context(GuardedRegion(params["dst"], dst_bytes))
        dst = guarded.region
        poison(src.host_array)  # then the pattern: a source byte the fill missed keeps the poison the check refuses
        fill_pattern(src.host_array, seed=params["seed"] + 1)
        run = executor.bind(src, dst, descriptors, params["concurrency"])
        whole = DescriptorList.contiguous(descriptors.total_bytes)
        # the ceiling beside a fragmented strategy: the same bytes as one copy, between the same buffers
        ceiling = None if executor.ceiling else get_executor(CEILING).bind(src, dst, whole, params["concurrency"])
        cleanup = stack.pop_all()

    def checker(rows: DescriptorList):
        guards = guarded.guards(rows.dst_offset, rows.length)  # every byte these rows do not write

        def check() -> None:
            row = first_mismatch(rows, src.host_array, dst.host_array, POISON)
            if row is not None:
                raise IntegrityError(f"descriptor {row} of {len(rows)} landed wrong"
                                     f"{unfilled_note(rows, src.host_array, row, POISON)}")
            guarded.check(guards=guards)

        return check

    workload = Workload(descriptors.total_bytes, run, guarded.poison, checker(descriptors))
    if ceiling is not None:
        workload.pair = Pair({"strategy": CEILING}, Workload(whole.total_bytes, ceiling, guarded.poison,
                                                             checker(whole)))
    metadata = {**case.layout, "fragments": fragments, "buffers": {"src": src.describe(), "dst": dst.describe()}}
    return Prepared(workload, metadata, cleanup.close, lambda m: rates(params["tokens"], fragments, m))
