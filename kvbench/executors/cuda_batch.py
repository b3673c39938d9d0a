"""cudaMemcpyBatchAsync called through ctypes, with its arrays built once: the timed operation is the
driver call and nothing else.

The runtime library is found as cupy 14 finds CUDA libraries (cuda.pathfinder, then the soname):
cupy links cudart statically, so `libcudart.so.N` by soname alone is missing on an image whose
loader path lacks it, and ce-batch would skip. The signature follows that library's own
cudaRuntimeGetVersion, and its path goes into the case's metadata (`cudart`).

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module

ACCESS_ORDER_STREAM = 1  # cudaMemcpySrcAccessOrderStream: the source is read in stream order
FIRST_VERSION = 12080  # CUDA 12.8 added cudaMemcpyBatchAsync


class MemcpyAttributes(ctypes.Structure):
    _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocType", ctypes.c_int), ("srcLocId", ctypes.c_int),
                ("dstLocType", ctypes.c_int), ("dstLocId", ctypes.c_int), ("flags", ctypes.c_uint)]


@dataclass(frozen=True)
class Runtime:
    """The CUDA runtime library cudaMemcpyBatchAsync is called from: where it was found (`path`), how
    (`found_via`: cuda.pathfinder, as cupy 14 looks for CUDA libraries, or the soname) and its own
    version (cudaRuntimeGetVersion of that library, e.g. 13000), which decides the signature."""

    library: Any
    path: str
    found_via: str
    version: int

    def facts(self) -> dict[str, Any]:
        return {"path": self.path, "found_via": self.found_via, "version": self.version}


def _load_runtime() -> tuple[Runtime | None, str | None]:
    """The runtime library, found as cupy finds CUDA libraries: cuda.pathfinder first (the pip
    wheels, CUDA_PATH, the loader's path), then the soname of cupy's own runtime's major version
    (cupy 14 links cudart statically, so nothing guarantees that file is already loaded). (None, why
    not) when neither loads."""
    tried = []
    try:
        from cuda.pathfinder import DynamicLibNotFoundError, load_nvidia_dynamic_lib
    except ImportError as exc:
        tried.append(f"cuda.pathfinder is not installed ({exc})")
    else:
        try:
            loaded = load_nvidia_dynamic_lib("cudart")
        except DynamicLibNotFoundError as exc:
            tried.append(f"cuda.pathfinder: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        else:
            path = loaded.abs_path or "libcudart (already loaded)"
            try:
                return Runtime(ctypes.CDLL(loaded.abs_path) if loaded.abs_path else _by_handle(loaded), path,
                               f"cuda.pathfinder ({loaded.found_via})", 0), None
            except OSError as exc:
                tried.append(f"cuda.pathfinder found {path}, which does not load ({exc})")
    major = int(cupy_module().cuda.runtime.runtimeGetVersion()) // 1000
    name = f"libcudart.so.{major}"
    try:
        return Runtime(ctypes.CDLL(name), name, "soname", 0), None
    except OSError as exc:
        tried.append(f"{name}: {exc}")
    return None, "no CUDA runtime library could be loaded for cudaMemcpyBatchAsync: " + "; ".join(tried)


def _by_handle(loaded) -> ctypes.CDLL:
    """A library cuda.pathfinder reports as loaded without a path: its handle as a ctypes library."""
    return ctypes.CDLL(None, handle=loaded._handle_uint)


def _runtime_version(library) -> int:
    """cudaRuntimeGetVersion of `library` itself (not of the runtime cupy linked): 0 where it fails."""
    try:
        function = library.cudaRuntimeGetVersion
    except AttributeError:
        return 0
    function.argtypes = [ctypes.POINTER(ctypes.c_int)]
    function.restype = ctypes.c_int
    version = ctypes.c_int(0)
    return int(version.value) if function(ctypes.byref(version)) == 0 else 0


@functools.cache
def _entry() -> tuple[object | None, Runtime | None, str | None]:
    """(cudaMemcpyBatchAsync as a ctypes function, its runtime, None) or (None, the runtime or None,
    why not)."""
    runtime, reason = _load_runtime()
    if runtime is None:
        return None, None, f"ce-batch: {reason}"
    runtime = Runtime(runtime.library, runtime.path, runtime.found_via, _runtime_version(runtime.library))
    if runtime.version < FIRST_VERSION:
        return None, runtime, (f"ce-batch needs CUDA >= 12.8 (cudaMemcpyBatchAsync); {runtime.path} is "
                               f"{runtime.version or 'of unknown version'}")
    try:
        function = runtime.library.cudaMemcpyBatchAsync
    except AttributeError:
        return None, runtime, f"ce-batch: cudaMemcpyBatchAsync not found in {runtime.path} ({runtime.version})"
    pointers = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    function.argtypes = pointers + ([ctypes.c_void_p] if runtime.version < 13000 else []) + [ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function, runtime, None


def runtime_facts() -> dict[str, Any]:
    """Where ce-batch's runtime library came from, for a case's metadata (`cudart`): path, found_via,
    version; or why none loaded."""
    _function, runtime, reason = _entry()
    facts = runtime.facts() if runtime else {}
    return {**facts, "reason": reason} if reason else facts


def batch_unavailable_reason() -> str | None:
    """None when cudaMemcpyBatchAsync can be called here, else why not (one line)."""
    return cuda_unavailable_reason() or _entry()[2]


class BatchCopy:
    """One batched submission of `len(sizes)` copies on `stream`; `__call__` is the driver call only."""

    def __init__(self, dsts: np.ndarray, srcs: np.ndarray, sizes: np.ndarray, stream_ptr: int) -> None:
        function, runtime, reason = _entry()
        if reason:
            raise RuntimeError(reason)
        version = runtime.version
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


def silent_skip_reason(rows: list[dict[str, Any]], driver_version: int) -> str | None:
    """Why the ce-batch rows of a run (its JSON `results`) that skipped are a failure, None when none
    skipped or the driver predates CUDA 12.8 (`driver_version`, cudaDriverGetVersion: 13000 is 13.0).
    On a newer driver cudaMemcpyBatchAsync exists, so a skip means kvbench did not find it, and
    `kv-gpu-best-vs-contiguous` would judge the best of the other strategies without saying so."""
    skipped = [r for r in rows if (r.get("params") or {}).get("strategy") == "ce-batch" and r.get("status") == "skipped"]
    if not skipped or driver_version < FIRST_VERSION:
        return None
    major, minor = driver_version // 1000, driver_version % 1000 // 10
    return (f"{len(skipped)} ce-batch case(s) skipped on a host whose driver supports CUDA {major}.{minor} "
            f"(>= 12.8, where cudaMemcpyBatchAsync exists): {skipped[0].get('reason')}")


def check_run_file(path: str) -> int:
    """scripts/gpu-check's step: 1 (and the reason on stdout) when a run JSON file's ce-batch cases
    skipped on a driver that has cudaMemcpyBatchAsync, else 0."""
    import json
    from pathlib import Path

    rows = json.loads(Path(path).read_text()).get("results", [])
    reason = silent_skip_reason(rows, int(cupy_module().cuda.runtime.driverGetVersion()))
    print(f"gpu-check: {reason}" if reason else "ce-batch: ran, or not due on this driver")
    return 1 if reason else 0
