"""KV restore from pinned host memory into GPU memory with the CUDA strategies of
kvbench/executors/cuda_kv.py, checked fragment by fragment against the source."""

from __future__ import annotations

from typing import Any

from kvbench.backends.cuda import CudaEventTimer, cuda_unavailable_reason, cupy_module, poison_between_copies
from kvbench.benches.base import Prepared
from kvbench.benches.gpu_common import LinkProbe, prepared_on_gpu
from kvbench.errors import IntegrityError
from kvbench.executors import cuda_kv
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure.engine import Workload
from kvbench.measure.measurement import Measurement
from kvbench.measure.timer import MonotonicTimer
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.pattern import fill_pattern


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    reason = cuda_unavailable_reason()
    if reason:
        return reason
    if direction != "restore":
        return "the CUDA strategies restore (host → GPU); kv.offload runs them in reverse later"
    if parse_kind(params["src"]).name != "pinned" or parse_kind(params["dst"]).name != "device":
        return f"strategy {params['strategy']} restores from src=pinned into dst=device"
    if params["strategy"] == "ce-batch":
        return cuda_kv.batch_unavailable_reason()
    return None


def prepare_restore(params: dict[str, Any], descriptors: DescriptorList, pool_bytes: int, moved_bytes: int,
                    layout: dict[str, Any]) -> Prepared:
    """`layout`: what the KV case records whatever its strategy (kv.layout_metadata)."""
    gpu = parse_kind(params["dst"]).index or 0
    return prepared_on_gpu(gpu, lambda: _build(params, descriptors, pool_bytes, moved_bytes, layout, gpu))


def _build(params: dict[str, Any], descriptors: DescriptorList, pool_bytes: int, moved_bytes: int,
           layout: dict[str, Any], gpu: int) -> Prepared:
    cp = cupy_module()
    probe = LinkProbe(gpu)
    src = allocate("pinned", pool_bytes)
    try:
        fill_pattern(src.host_array, seed=params["seed"] + 1)
        dst = cp.zeros(moved_bytes, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        strategy = params["strategy"]
        run = cuda_kv.bind(strategy, src.address, dst.data.ptr, descriptors, stream, gpu, src.host_array)
    except BaseException:
        probe.close()
        src.close()
        raise
    # A graph of every fragment or one batched call is thousands of copies per operation: the timer
    # runs those ungated rather than queue them behind its spin kernel (see CudaEventTimer).
    timer = (MonotonicTimer() if strategy in cuda_kv.HOST_TIMED
             else CudaEventTimer(stream, gpu, while_busy=probe.read_under_load,
                                 copies_per_op=cuda_kv.copies_per_op(strategy, len(descriptors))))

    def reset() -> None:
        poison_between_copies(gpu, dst)

    def check() -> None:
        stream.synchronize()
        row = first_mismatch(descriptors, src.host_array, dst.get())
        if row is not None:
            raise IntegrityError(f"{strategy}: fragment {row} of {len(descriptors)} landed wrong on the GPU")

    def derive(m: Measurement) -> dict[str, Any]:
        median = m.summary.median
        return {"tokens_per_s": params["tokens"] / median, "us_per_fragment": median / len(descriptors) * 1e6,
                **probe.facts()}

    metadata = {**layout, "fragments": len(descriptors), "timer": timer.name, "gpu": gpu,
                "buffers": {"src": src.describe()}}

    def close() -> None:
        stream.synchronize()
        probe.close()
        src.close()

    return Prepared(Workload(descriptors.total_bytes, run, reset, check, timer), metadata, close, derive)


def path(params: dict[str, Any]) -> list:
    return [("dram_read",), ("gpu_link", parse_kind(params["dst"]).index or 0)]

