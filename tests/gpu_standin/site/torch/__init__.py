"""torch as the kvbench GPU stand-in answers it: TEST ONLY, tensors in numpy, CUDA tensors in the
stand-in's device memory, their work on the current stream, run when the host waits. bf16 is kept
as its 16-bit pattern and computed in float32. Measures nothing."""

from __future__ import annotations

import sys
import types

import numpy as np
from gpu_standin.machine import Op, copy_bytes, machine

__version__ = "0.0-standin"
STANDIN = True


class dtype:
    def __init__(self, name: str, storage, itemsize: int) -> None:
        self.name, self.storage, self.itemsize = name, np.dtype(storage), itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


uint8 = dtype("uint8", np.uint8, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", np.uint16, 2)
float32 = dtype("float32", np.float32, 4)
_BY_STORAGE = {np.dtype(np.uint8): uint8, np.dtype(np.float16): float16, np.dtype(np.float32): float32}


def _to_f32(a: np.ndarray, kind: dtype) -> np.ndarray:
    if kind is bfloat16:
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return a.astype(np.float32)


def _from_f32(a: np.ndarray, kind: dtype) -> np.ndarray:
    if kind is bfloat16:  # round to nearest even, as a bf16 store does
        bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
        return ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    return a.astype(kind.storage)


class device:
    def __init__(self, kind: str, index: int | None = None) -> None:
        if ":" in kind:
            kind, index = kind.split(":")[0], int(kind.split(":")[1])
        self.type, self.index = kind, (index or 0) if kind == "cuda" else None

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"


def _device(value) -> device:
    if value is None:
        return device("cpu")
    return value if isinstance(value, device) else device(str(value))


class Tensor:
    def __init__(self, array: np.ndarray, kind: dtype, where: device, owner: object = None) -> None:
        self._a, self.dtype, self.device, self._owner = array, kind, where, owner

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    shape = property(lambda self: self._a.shape)

    def _wait(self) -> None:
        if self.is_cuda:
            cuda.current_stream(self.device)._s.synchronize()

    def _enqueue(self, fn, name: str) -> None:
        if self.is_cuda:
            cuda.current_stream(self.device)._s.enqueue(Op(fn, name))
        else:
            fn()

    def numpy(self) -> np.ndarray:
        if self.is_cuda:
            raise TypeError("can't convert cuda tensor to numpy: use .cpu()")
        return self._a

    def cpu(self) -> Tensor:
        self._wait()
        return Tensor(self._a.copy(), self.dtype, device("cpu"))

    def view(self, kind: dtype) -> Tensor:
        return Tensor(self._a.view(kind.storage), kind, self.device, self)

    def __getitem__(self, key) -> Tensor:
        return Tensor(self._a[key], self.dtype, self.device, self)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        where = self if self.is_cuda else src
        dst_bytes, src_bytes = self._a.view(np.uint8).reshape(-1), src._a.view(np.uint8).reshape(-1)
        m = machine()
        where._enqueue(lambda: copy_bytes(m, dst_bytes, src_bytes), "copy_")
        if not non_blocking or not (self.is_cuda and src.is_cuda or _pinned(src) or _pinned(self)):
            where._wait()
        return self

    def fill_(self, value) -> Tensor:
        target = self._a
        self._enqueue(lambda: target.fill(value), "fill_")
        return self

    def _eager(self, array: np.ndarray, kind: dtype) -> Tensor:
        return _make(array, kind, self.device)

    def float(self) -> Tensor:
        self._wait()
        return self._eager(_to_f32(self._a, self.dtype), float32)

    def __matmul__(self, other: Tensor) -> Tensor:
        self._wait()
        return self._eager(_from_f32(_to_f32(self._a, self.dtype) @ _to_f32(other._a, other.dtype), self.dtype),
                           self.dtype)

    def _math(self, other, op) -> Tensor:
        self._wait()
        value = other._a if isinstance(other, Tensor) else other
        return self._eager(op(self._a, value).astype(self.dtype.storage), self.dtype)

    def __sub__(self, other) -> Tensor:
        return self._math(other, np.subtract)

    def __truediv__(self, other) -> Tensor:
        return self._math(other, np.divide)

    def __mul__(self, other) -> Tensor:
        return self._math(other, np.multiply)

    def abs(self) -> Tensor:
        return self._math(None, lambda a, _: np.abs(a))

    def max(self) -> Tensor:
        return self._math(None, lambda a, _: np.asarray(a.max()))

    def clamp_min(self, low) -> Tensor:
        return self._math(low, np.maximum)

    def item(self):
        self._wait()
        return float(self._a) if self.dtype is float32 else self._a.item()

    def __float__(self) -> float:
        return float(self.item())


def _pinned(t: Tensor) -> bool:
    alloc = machine().find(int(t._a.ctypes.data), max(1, t._a.nbytes)) if t._a.nbytes else None
    return alloc is not None and alloc.kind == "pinned"


def _make(array: np.ndarray, kind: dtype, where: device) -> Tensor:
    out = empty(*array.shape, dtype=kind, device=where)
    out._a[...] = array
    return out


def empty(*size, dtype: dtype = float32, device=None, pin_memory: bool = False) -> Tensor:
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else tuple(size)
    where = _device(device)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if where.type == "cuda" or pin_memory:
        raw, _alloc = machine().allocate(nbytes, "device" if where.type == "cuda" else "pinned",
                                         where.index if where.type == "cuda" else None)
    else:
        raw = np.empty(nbytes, dtype=np.uint8)
    return Tensor(raw.view(dtype.storage).reshape(shape), dtype, where, raw)


def from_numpy(array: np.ndarray) -> Tensor:
    return Tensor(array, _BY_STORAGE[array.dtype], device("cpu"))


class Generator:
    def __init__(self, device=None) -> None:
        self.device = _device(device)
        self.rng = np.random.default_rng(0)

    def manual_seed(self, seed: int) -> Generator:
        self.rng = np.random.default_rng(seed)
        return self


def randn(*size, device=None, dtype: dtype = float32, generator: Generator | None = None) -> Tensor:
    rng = generator.rng if generator is not None else np.random.default_rng()
    values = rng.standard_normal(size, dtype=np.float32)
    return _make(_from_f32(values, dtype), dtype, _device(device))


def matmul(a: Tensor, b: Tensor, out: Tensor | None = None) -> Tensor:
    if out is None:
        return a @ b
    target = out._a

    def run() -> None:
        how = machine().broken("matmul")  # tests: a product that does nothing or stops halfway
        rows = 0 if how == "nothing" else len(target) // 2 if how == "half" else len(target)
        target[:rows] = _from_f32(_to_f32(a._a[:rows], a.dtype) @ _to_f32(b._a, b.dtype), out.dtype)

    out._enqueue(run, "matmul")
    return out


cuda = types.ModuleType("torch.cuda")
sys.modules["torch.cuda"] = cuda
from torch import _cuda

_cuda.fill(cuda)
