"""cuda.bindings.runtime (cuda-python 13) as the kvbench GPU stand-in answers it: TEST ONLY."""

from __future__ import annotations

import enum

from gpu_standin.machine import CudaError, Op, copy_bytes, machine


class cudaError_t(enum.IntEnum):
    cudaSuccess = 0
    cudaErrorInvalidValue = 1


class cudaMemcpySrcAccessOrder(enum.IntEnum):
    cudaMemcpySrcAccessOrderInvalid = 0
    cudaMemcpySrcAccessOrderStream = 1
    cudaMemcpySrcAccessOrderDuringApiCall = 2
    cudaMemcpySrcAccessOrderAny = 3


class cudaMemcpyAttributes:
    def __init__(self) -> None:
        self.srcAccessOrder = cudaMemcpySrcAccessOrder.cudaMemcpySrcAccessOrderInvalid
        self.flags = 0


def batch_op(dsts, srcs, sizes) -> Op:
    """One batched copy: every (dst, src, size), checked at the call, run in stream order."""
    m = machine()
    triples = [(int(d), int(s), int(n)) for d, s, n in zip(dsts, srcs, sizes, strict=True)]
    for d, s, n in triples:
        m.view(d, n, "any"), m.view(s, n, "any")

    def run() -> None:
        for d, s, n in triples:
            copy_bytes(m, m.view(d, n, "any"), m.view(s, n, "any"))

    return Op(run, "memcpy_batch")


def cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream):
    """The 8-argument form of cuda-bindings 13 (no failIdx)."""
    if not (len(dsts) == len(srcs) == len(sizes) == count) or count == 0:
        return (cudaError_t.cudaErrorInvalidValue,)
    if int(stream) == 0:
        raise CudaError("cudaMemcpyBatchAsync: not on the legacy NULL stream")
    machine().stream_by_ptr(int(stream)).enqueue(batch_op(dsts, srcs, sizes))
    return (cudaError_t.cudaSuccess,)
