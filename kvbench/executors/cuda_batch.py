"""cudaMemcpyBatchAsync called through ctypes on the CUDA runtime cupy loaded, with its arrays built
once: the timed operation is the driver call and nothing else.

cuda-python's binding takes Python lists and converts them on every call (about 0.5 µs a copy,
measured with cuda-bindings 13.0.3: 6.3 ms for 10,240 copies, 86 ms for 163,840, while the bytes
move in about 6 ms), so through it `ce-batch` timed Python. Here the pointer and size arrays are
numpy uint64 arrays made when the case is prepared, and each call passes their addresses.

Signatures (cuda_runtime_api.h): CUDA 12.8-12.9 take a `size_t* failIdx` before the stream (9
arguments); CUDA 13 dropped it (8 arguments). The attributes struct is
`{srcAccessOrder, {type, id} srcLocHint, {type, id} dstLocHint, flags}`: six 32-bit fields.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module

ACCESS_ORDER_STREAM = 1  # cudaMemcpySrcAccessOrderStream: the source is read in stream order
FIRST_VERSION = 12080  # CUDA 12.8 added cudaMemcpyBatchAsync


class MemcpyAttributes(ctypes.Structure):
    _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocType", ctypes.c_int), ("srcLocId", ctypes.c_int),
                ("dstLocType", ctypes.c_int), ("dstLocId", ctypes.c_int), ("flags", ctypes.c_uint)]


@functools.cache
def _entry() -> tuple[object | None, int, str | None]:
    """(cudaMemcpyBatchAsync as a ctypes function, the runtime's version, None) or (None, 0, why not)."""
    version = int(cupy_module().cuda.runtime.runtimeGetVersion())
    if version < FIRST_VERSION:
        return None, version, f"ce-batch needs CUDA >= 12.8 (cudaMemcpyBatchAsync); this runtime is {version}"
    name = f"libcudart.so.{version // 1000}"
    try:  # already in the process (cupy loaded it): dlopen answers with that copy, matched by its soname
        library = ctypes.CDLL(name)
        function = library.cudaMemcpyBatchAsync
    except (OSError, AttributeError) as exc:
        return None, version, f"ce-batch: cudaMemcpyBatchAsync not found in {name} ({exc})"
    pointers = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    function.argtypes = pointers + ([ctypes.c_void_p] if version < 13000 else []) + [ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function, version, None


def batch_unavailable_reason() -> str | None:
    """None when cudaMemcpyBatchAsync can be called here, else why not (one line)."""
    return cuda_unavailable_reason() or _entry()[2]


class BatchCopy:
    """One batched submission of `len(sizes)` copies on `stream`; `__call__` is the driver call only."""

    def __init__(self, dsts: np.ndarray, srcs: np.ndarray, sizes: np.ndarray, stream_ptr: int) -> None:
        function, version, reason = _entry()
        if reason:
            raise RuntimeError(reason)
        self._arrays = [np.ascontiguousarray(a, dtype=np.uint64) for a in (dsts, srcs, sizes)]
        self._attrs = MemcpyAttributes(ACCESS_ORDER_STREAM, 0, 0, 0, 0, 0)
        self._attr_index = np.zeros(1, dtype=np.uint64)  # every copy uses attrs[0]
        self._fail_index = np.zeros(1, dtype=np.uint64)
        count = len(self._arrays[2])
        args = [ctypes.c_void_p(int(a.ctypes.data)) for a in self._arrays]
        args += [ctypes.c_size_t(count), ctypes.c_void_p(ctypes.addressof(self._attrs)),
                 ctypes.c_void_p(int(self._attr_index.ctypes.data)), ctypes.c_size_t(1)]
        if version < 13000:
            args.append(ctypes.c_void_p(int(self._fail_index.ctypes.data)))
        self._args = (*args, ctypes.c_void_p(stream_ptr))
        self._function = function

    def __call__(self) -> None:
        err = self._function(*self._args)
        if err != 0:
            raise RuntimeError(f"cudaMemcpyBatchAsync failed: cudaError {err}")
