"""KV restore from pinned host memory into GPU memory with the CUDA strategies (executors of family
`cuda`, kvbench/executors/cuda_kv.py), checked fragment by fragment against the source, with guard
bytes around the destination checked unchanged (kvbench/memory/guard.py).

A fragmented strategy is paired with `gpu-contiguous` (one cudaMemcpyAsync of the same bytes,
between the same buffers, on the same stream), timed interleaved with it on the same clock: CUDA
events for an event-timed strategy, the host clock (ending in a synchronize) for a host-timed one.
Its ratio to one contiguous copy is then measured per pair of samples (docs/measurement.md)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from kvbench.backends.cuda import (
    cuda_unavailable_reason,
    cupy_module,
    link_probe,
)
from kvbench.benches.base import Prepared, built_in_stack, prepared_on_gpu
from kvbench.benches.kv.case import KVCase, rates
from kvbench.errors import IntegrityError
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch, unfilled_note
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure.cuda_timer import CudaEventTimer
from kvbench.measure.engine import Pair, Workload
from kvbench.measure.timer import MonotonicTimer
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.pattern import POISON, fill_pattern, poison


CEILING = "gpu-contiguous"  # the executor a fragmented CUDA strategy is paired with


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    reason = cuda_unavailable_reason()
    if reason:
        return reason
    if direction != "restore":
        return "the CUDA strategies restore (host → GPU); kv.offload runs them in reverse later"
    if parse_kind(params["src"]).name != "pinned" or parse_kind(params["dst"]).name != "device":
        return f"strategy {params['strategy']} restores from src=pinned into dst=device"
    return get_executor(params["strategy"]).unavailable_reason()


def path(params: dict[str, Any]) -> list[Segment]:
    return [("dram_read",), ("gpu_link", parse_kind(params["dst"]).index or 0)]


def prepare(case: KVCase) -> Prepared:
    gpu = parse_kind(case.params["dst"]).index or 0
    return prepared_on_gpu(gpu, lambda: _build(case, gpu))


def _build(case: KVCase, gpu: int) -> Prepared:
    return built_in_stack(lambda stack: _build_in(case, gpu, stack))


def _build_in(case: KVCase, gpu: int, stack: ExitStack) -> Prepared:
    cp = cupy_module()
    params, executor = case.params, get_executor(case.params["strategy"])
    descriptors = DescriptorList.contiguous(case.descriptors.total_bytes) if executor.ceiling else case.descriptors
    probe = link_probe(gpu)
    stack.callback(probe.close)
    src = stack.enter_context(allocate("pinned", case.pool_bytes))
    poison(src.host_array)  # then the pattern: a source byte the fill missed keeps the poison the check refuses
    fill_pattern(src.host_array, seed=params["seed"] + 1)
    guarded = stack.enter_context(GuardedRegion(params["dst"], case.moved_bytes))
    dst = guarded.region
    stream = cp.cuda.Stream(non_blocking=True)
    stack.callback(stream.synchronize)  # nothing in flight when the buffers go
    run = executor.bind(src, dst, descriptors, stream=stream)
    # A graph of every fragment or one batched call is thousands of copies per operation: the timer
    # runs those ungated rather than queue them behind its spin kernel (see CudaEventTimer).
    timer = (MonotonicTimer() if executor.host_timed
             else CudaEventTimer(stream, gpu, while_busy=probe.read_under_load,
                                 copies_per_op=executor.copies_per_op(len(descriptors))))

    check = checker(executor.name, descriptors, src, guarded, stream)
    workload = Workload(descriptors.total_bytes, run, guarded.poison, check, timer)
    if not executor.ceiling:
        workload.pair = _ceiling_pair(case, executor.host_timed, src, guarded, stream, gpu)

    def derive(m) -> dict[str, Any]:
        return {**rates(params["tokens"], len(descriptors), m), **probe.facts()}

    metadata = {**case.layout, "fragments": len(descriptors), "timer": timer.name, "gpu": gpu,
                "buffers": {"src": src.describe(), "dst": dst.describe()}, **executor.facts()}
    return Prepared(workload, metadata, derive=derive)


def checker(name: str, rows: DescriptorList, src, guarded: GuardedRegion, stream):
    """Every row's bytes on the GPU against the source, and every byte the rows do not write against the
    poison, from one copy of the destination to the host."""
    guards = guarded.guards(rows.dst_offset, rows.length)

    def check() -> None:
        stream.synchronize()
        whole = guarded.host_bytes()
        row = first_mismatch(rows, src.host_array, guarded.inner(whole), POISON)
        if row is not None:
            raise IntegrityError(f"{name}: fragment {row} of {len(rows)} landed wrong on the GPU"
                                 f"{unfilled_note(rows, src.host_array, row, POISON)}")
        guarded.check(whole, guards)

    return check


def _ceiling_pair(case: KVCase, host_timed: bool, src, guarded: GuardedRegion, stream, gpu: int) -> Pair:
    """`gpu-contiguous` on the case's buffers and stream, on the case's clock."""
    whole = DescriptorList.contiguous(case.descriptors.total_bytes)
    copy = get_executor(CEILING).bind(src, guarded.region, whole, stream=stream)
    if host_timed:  # the case's operation ends in a synchronize on the host clock: so does the ceiling's
        def run() -> None:
            copy()
            stream.synchronize()
    else:
        run = copy
    timer = MonotonicTimer() if host_timed else CudaEventTimer(stream, gpu, copies_per_op=1)

    check = checker(f"{CEILING} (the contiguous copy beside the strategy)", whole, src, guarded, stream)
    return Pair({"strategy": CEILING}, Workload(whole.total_bytes, run, guarded.poison, check, timer))
