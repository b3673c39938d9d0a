"""KV fragment strategies on CUDA, all fed the same descriptor list (issue: every gather
strategy side by side). Each returns an `enqueue()` that puts one restore on `stream`; the
CUDA event timer measures it behind a spin kernel.

* `ce-loop`: one cudaMemcpyAsync per fragment issued from Python — the naive engine, named
  so that its submission cost is visible, not hidden.
* `ce-graph`: the same copies captured once into a CUDA graph and replayed.
* `ce-batch`: cudaMemcpyBatchAsync (CUDA ≥ 12.8, through cuda-python).
* `sm-gather`: one kernel (kernels/kv_gather.cu) copying every fragment through the pinned
  source's device pointer, 16-byte vectors where aligned.
* `staged`: numba gathers fragments into pinned staging chunks, each followed by one DMA,
  double-buffered so the CPU gathers chunk k+1 while chunk k is copied.
* `gpu-contiguous`: the same bytes in one cudaMemcpyAsync — the ceiling.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvbench.backends.cuda import cupy_module, kernel_module, launch_shape
from kvbench.errors import BadInput
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.strategies import CUDA as STRATEGIES

H2D, D2D = 1, 3
STAGE_BYTES = 8 << 20

# Timed on the host clock, ending in a stream synchronize: their cost *is* the host side
# (Python submission, CPU gathering), which a spin kernel would hide or deadlock on.
HOST_TIMED = ("ce-loop", "staged")


def copies_per_op(strategy: str, fragments: int) -> int:
    """Copies one operation of `strategy` puts on the stream: every fragment for a graph or a batched
    call, one launch or one copy for the kernel and the contiguous ceiling."""
    return fragments if strategy in ("ce-graph", "ce-batch") else 1


def batch_unavailable_reason() -> str | None:
    try:
        from cuda.bindings import runtime as rt  # cuda-python
    except ImportError:
        return "ce-batch needs cuda-python (cuda.bindings) for cudaMemcpyBatchAsync"
    if not hasattr(rt, "cudaMemcpyBatchAsync"):
        return "ce-batch needs CUDA >= 12.8 (cudaMemcpyBatchAsync)"
    return None


def bind(strategy: str, src_ptr: int, dst_ptr: int, descriptors: DescriptorList, stream, gpu: int,
         src_host: np.ndarray | None = None) -> Callable[[], None]:
    cp = cupy_module()
    rows = descriptors.rows
    src_off = rows["src_offset"].astype(np.uint64)
    dst_off = rows["dst_offset"].astype(np.uint64)
    length = rows["length"].astype(np.uint64)
    if strategy == "gpu-contiguous":
        total = int(length.sum())
        return lambda: cp.cuda.runtime.memcpyAsync(dst_ptr, src_ptr, total, H2D, stream.ptr)
    if strategy == "ce-loop":
        triples = list(zip((dst_ptr + dst_off).tolist(), (src_ptr + src_off).tolist(), length.tolist(), strict=True))

        def loop() -> None:
            for d, s, n in triples:
                cp.cuda.runtime.memcpyAsync(d, s, n, H2D, stream.ptr)
            stream.synchronize()

        return loop
    if strategy == "ce-graph":
        capture = cp.cuda.Stream(non_blocking=True)
        triples = list(zip((dst_ptr + dst_off).tolist(), (src_ptr + src_off).tolist(), length.tolist(), strict=True))
        capture.begin_capture()
        for d, s, n in triples:
            cp.cuda.runtime.memcpyAsync(d, s, n, H2D, capture.ptr)
        graph = capture.end_capture()
        graph.upload(stream)
        return lambda: graph.launch(stream)
    if strategy == "ce-batch":
        reason = batch_unavailable_reason()
        if reason:
            raise BadInput(reason)
        from cuda.bindings import runtime as rt

        dsts, srcs, sizes = (dst_ptr + dst_off).tolist(), (src_ptr + src_off).tolist(), length.tolist()
        attrs = rt.cudaMemcpyAttributes()
        attrs.srcAccessOrder = rt.cudaMemcpySrcAccessOrder.cudaMemcpySrcAccessOrderStream

        def batch() -> None:
            err, *_ = rt.cudaMemcpyBatchAsync(dsts, srcs, sizes, len(sizes), [attrs], [0], 1, stream.ptr)
            if int(err) != 0:
                raise RuntimeError(f"cudaMemcpyBatchAsync failed: {err}")

        return batch
    if strategy == "sm-gather":
        kernel = kernel_module("kv_gather", gpu).get_function("kv_gather")
        d_src, d_dst, d_len = cp.asarray(src_off), cp.asarray(dst_off), cp.asarray(length)
        grid, block = launch_shape(gpu, 256)
        rows_n = cp.uint64(len(length))
        return lambda: kernel((grid,), (block,), (cp.uint64(src_ptr), cp.uint64(dst_ptr), d_src, d_dst, d_len, rows_n),
                              stream=stream)
    if strategy == "staged":
        return _staged(src_host, dst_ptr, descriptors, stream)
    raise BadInput(f"unknown CUDA strategy '{strategy}' (known: {', '.join(STRATEGIES)})")


def _staged(src_host: np.ndarray | None, dst_ptr: int, descriptors: DescriptorList, stream) -> Callable[[], None]:
    """CPU gathers in destination order into pinned stages; one DMA per stage, double-buffered."""
    from kvbench.executors.host import _copy_rows_parallel
    from kvbench.executors.staging import plan_stages

    cp = cupy_module()
    if src_host is None:
        raise BadInput("strategy staged gathers on the CPU: the source must be host memory")
    stages = plan_stages(descriptors, STAGE_BYTES)  # fragments cut at every stage boundary
    pinned = [cp.cuda.alloc_pinned_memory(STAGE_BYTES) for _ in range(2)]
    buffers = [np.frombuffer(p, dtype=np.uint8, count=STAGE_BYTES) for p in pinned]
    done = [cp.cuda.Event(), cp.cuda.Event()]
    src_addr = np.uint64(src_host.ctypes.data)
    work = [(s.dst_offset, s.size, np.ascontiguousarray(s.rows.src_offset), np.ascontiguousarray(s.rows.dst_offset),
             np.ascontiguousarray(s.rows.length)) for s in stages]

    def run() -> None:
        for c, (dst_offset, size, src_off, local_off, length) in enumerate(work):
            k = c % 2
            done[k].synchronize()  # the DMA that last used this stage has finished
            _copy_rows_parallel(np.uint64(buffers[k].ctypes.data), src_addr, src_off, local_off, length)
            cp.cuda.runtime.memcpyAsync(dst_ptr + dst_offset, buffers[k].ctypes.data, size, H2D, stream.ptr)
            done[k].record(stream)
        stream.synchronize()

    run.keepalive = pinned  # type: ignore[attr-defined]
    return run
