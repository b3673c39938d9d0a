"""cupy as the kvbench GPU stand-in answers it: TEST ONLY, numpy arrays registered as device memory
on a simulated GPU (tests/gpu_standin). It measures nothing; a test that imports it says so.

Arrays live in device memory of the current device. Work kvbench enqueues (fill, kernels,
matmul) runs on the current stream when the host waits; routines that create or read arrays
(zeros, asarray, get, array_equal, arithmetic) wait for the current stream first, then act.
"""

from __future__ import annotations

import re

import numpy as np
from gpu_standin.kernels import KERNELS, launch_op
from gpu_standin.machine import CudaError, Op, machine

from cupy import cuda

__version__ = "0.0-standin"
STANDIN = True  # tests ask this to know they run on the stand-in, not a GPU

uint8, uint16, uint32, uint64, int32, int64 = np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64
float16, float32, float64, bool_ = np.float16, np.float32, np.float64, np.bool_


def _wait_current() -> None:
    cuda.get_current_stream().synchronize()


class ndarray:
    """A view of stand-in device memory."""

    def __init__(self, array: np.ndarray, owner: object = None) -> None:
        self._a, self._owner = array, owner

    @property
    def data(self) -> cuda.MemoryPointer:
        return cuda.MemoryPointer(int(self._a.ctypes.data))

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    ndim = property(lambda self: self._a.ndim)

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, key) -> ndarray:
        return ndarray(self._a[key], self)

    def view(self, dtype) -> ndarray:
        return ndarray(self._a.view(dtype), self)

    def reshape(self, *shape) -> ndarray:
        return ndarray(self._a.reshape(*shape), self)

    def get(self) -> np.ndarray:
        _wait_current()
        return self._a.copy()

    def set(self, array: np.ndarray) -> None:
        source = np.ascontiguousarray(array).view(np.uint8).ravel()
        target = self._a.view(np.uint8).reshape(-1)
        stream = cuda.get_current_stream()
        stream._s.enqueue(Op(lambda: target.__setitem__(slice(None), source), "set"))
        stream.synchronize()

    def fill(self, value) -> None:
        target = self._a
        cuda.get_current_stream()._s.enqueue(Op(lambda: target.fill(value), "fill"))

    def astype(self, dtype) -> ndarray:
        _wait_current()
        return _new(self._a.astype(dtype))

    def _binary(self, other, op) -> ndarray:
        _wait_current()
        with np.errstate(over="ignore"):
            return _new(op(self._a, other._a if isinstance(other, ndarray) else other))

    def __add__(self, other) -> ndarray:
        return self._binary(other, np.add)

    __radd__ = __add__

    def __eq__(self, other) -> ndarray:  # type: ignore[override]
        return self._binary(other, np.equal)

    def sum(self, dtype=None) -> ndarray:
        _wait_current()
        return _new(np.asarray(self._a.sum(dtype=dtype)))

    def item(self):
        _wait_current()
        return self._a.item()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __int__(self) -> int:
        return int(self.item())


def _new(array: np.ndarray) -> ndarray:
    """A new device array holding `array`'s values."""
    out = empty(array.shape, dtype=array.dtype)
    out._a[...] = array
    return out


def empty(shape, dtype=np.float64) -> ndarray:
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw, _alloc = machine().allocate(nbytes, "device")
    return ndarray(raw.view(dtype).reshape(shape), raw)


def zeros(shape, dtype=np.float64) -> ndarray:
    _wait_current()
    out = empty(shape, dtype)
    out._a[...] = 0
    return out


def ones(shape, dtype=np.float64) -> ndarray:
    _wait_current()
    out = empty(shape, dtype)
    out._a[...] = 1
    return out


def asarray(array, dtype=None) -> ndarray:
    if isinstance(array, ndarray):
        return array if dtype is None else array.astype(dtype)
    _wait_current()
    return _new(np.asarray(array, dtype=dtype))


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    _wait_current()
    return _new(np.arange(start, stop, step, dtype=dtype))


def array_equal(a, b) -> ndarray:
    _wait_current()
    left = a._a if isinstance(a, ndarray) else np.asarray(a)
    right = b._a if isinstance(b, ndarray) else np.asarray(b)
    return _new(np.asarray(np.array_equal(left, right)))


_LAST_PRODUCT: list = []  # [a's bytes, b's bytes, the product] of the last distinct product


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `x` and `y` hold the same bytes, compared as unsigned integers of their item size: a
    float16 comparison runs in software (a 4096² pair took 80 ms, the integer one 5 ms), and equal
    bits, not equal values, are what make the cached product the right one."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype.itemsize not in (1, 2, 4, 8):
        return bool(np.array_equal(x, y))
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return bool(np.array_equal(x.view(unsigned), y.view(unsigned)))


def matmul(a: ndarray, b: ndarray, out: ndarray | None = None) -> ndarray:
    """a @ b in float32, rounded to the output's type, on the current stream. The last product is
    kept with copies of its inputs: a launch on equal inputs (a load's repeated 4096³ product) writes
    the same result without recomputing it."""
    out = out if out is not None else empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    target = out._a

    def run() -> None:
        last = _LAST_PRODUCT
        if not (last and last[2].dtype == target.dtype and _same_bits(last[0], a._a)
                and _same_bits(last[1], b._a)):
            product = (a._a.astype(np.float32) @ b._a.astype(np.float32)).astype(target.dtype)
            last[:] = [a._a.copy(), b._a.copy(), product]
        target[...] = last[2]

    cuda.get_current_stream()._s.enqueue(Op(run, "matmul"))
    return out


class _Function:
    def __init__(self, name: str, device: int) -> None:
        self.name, self.device = name, device

    def __call__(self, grid, block, args, stream=None, shared_mem: int = 0) -> None:
        m = machine()
        stream = stream or cuda.get_current_stream()
        if stream._s.device != self.device or m.device() != self.device:
            raise CudaError(f"cudaErrorInvalidResourceHandle: kernel {self.name} of device {self.device} launched "
                            f"on device {m.device()}'s context, stream of device {stream._s.device}")
        values = [int(a.data.ptr) if isinstance(a, ndarray) else int(a) for a in args]
        stream._s.enqueue(launch_op(m, self.name, int(np.prod(grid)), int(np.prod(block)), values,
                                     self.device))


class RawModule:
    """Kernels by name from CUDA source: each name must have a numpy version (gpu_standin.kernels)."""

    def __init__(self, code: str, options: tuple = (), **kwargs) -> None:
        self.names = set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)', code))
        self.device = machine().device()
        missing = self.names - set(KERNELS) - {"spin_until"}
        if missing:
            raise CudaError(f"the stand-in has no numpy version of kernels {sorted(missing)}")

    def compile(self, *args, **kwargs) -> None:
        return None

    def get_function(self, name: str) -> _Function:
        if name not in self.names:
            raise CudaError(f"named symbol not found: {name}")
        return _Function(name, self.device)


class _Pool:
    def free_all_blocks(self) -> None:
        machine().freed_pools += 1

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0


_DEVICE_POOL, _PINNED_POOL = _Pool(), _Pool()


def get_default_memory_pool() -> _Pool:
    return _DEVICE_POOL


def get_default_pinned_memory_pool() -> _Pool:
    return _PINNED_POOL
