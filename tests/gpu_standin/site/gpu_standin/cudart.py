"""libcudart.so.13 as the stand-in answers it (TEST ONLY): `cudaRuntimeGetVersion` and `cudaMemcpyBatchAsync` as real C function
pointer (a ctypes callback), so kvbench's ctypes call is marshalled exactly as against the runtime;
the callback reads the arrays at the addresses given, as the runtime does, and queues the copies."""

from __future__ import annotations

import ctypes

import numpy as np

from gpu_standin.machine import CudaError, Op, copy_bytes, machine

SUCCESS, INVALID_VALUE = 0, 1
PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def _u64(address: int | None, count: int) -> np.ndarray:
    if not address:
        raise CudaError("cudaErrorInvalidValue: a NULL array")
    return np.ctypeslib.as_array((ctypes.c_uint64 * count).from_address(address)).copy()


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


def _batch(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, stream) -> int:
    try:
        if count == 0 or num_attrs != 1 or not attrs:
            return INVALID_VALUE
        order = ctypes.c_int.from_address(attrs).value
        if order != 1:  # kvbench asks for stream order; anything else would change what is timed
            return INVALID_VALUE
        if not stream:
            return INVALID_VALUE  # "Must not be legacy NULL stream"
        machine().batch_arrays.append((dsts, srcs, sizes))
        op = batch_op(_u64(dsts, count), _u64(srcs, count), _u64(sizes, count))
        machine().stream_by_ptr(int(stream)).enqueue(op)
    except CudaError:
        return INVALID_VALUE
    return SUCCESS


VERSION_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))
RUNTIME_VERSION = 13000


def _version(out) -> int:
    out[0] = RUNTIME_VERSION
    return SUCCESS


class Library:
    """A CUDA 13.0 runtime; `batch=False`: one without cudaMemcpyBatchAsync."""

    def __init__(self, batch: bool = True) -> None:
        self.cudaRuntimeGetVersion = VERSION_PROTOTYPE(_version)
        if batch:
            self.cudaMemcpyBatchAsync = PROTOTYPE(_batch)


LIBRARY, NO_BATCH = Library(), Library(batch=False)


def library(name: str) -> Library:
    """What loading `name` gives on the machine's image (`machine.cudart`); OSError where none loads."""
    how = machine().cudart
    if how == "missing":
        raise OSError(f"{name}: cannot open shared object file: No such file or directory (stand-in)")
    return NO_BATCH if how == "no-batch" else LIBRARY
