"""Whether CUDA can be used here, and why not; cupy is imported only when asked."""

from __future__ import annotations

import functools
from types import ModuleType


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """None when cupy can reach at least one CUDA device, else the reason in one line."""
    try:
        import cupy
    except ImportError:
        return "no CUDA device: cupy is not installed (install the cu12 or cu13 extra on a GPU host)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises CUDARuntimeError/ CUDADriverError without a driver
        return f"no CUDA device: {_first_line(exc)}"
    if count == 0:
        return "no CUDA device: the driver reports 0 devices"
    return None


def cupy_module() -> ModuleType:
    """The cupy module; raises `RuntimeError` with the reason when CUDA is unavailable."""
    reason = cuda_unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    import cupy

    return cupy


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()
