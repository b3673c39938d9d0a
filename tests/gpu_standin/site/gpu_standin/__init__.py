"""The simulated machine behind the kvbench GPU stand-in (TEST ONLY; see tests/gpu_standin).

`activate()` makes `ctypes.CDLL("libcuda.so.1")` (kvbench's "is there a driver" question) answer
with this process instead of a driver library, and `ctypes.CDLL("libcudart.so.13")` (or the path the
stand-in's cuda.pathfinder gives) with the stand-in's runtime (gpu_standin.cudart: cudaMemcpyBatchAsync). The stand-in's own settings are its environment
variables, read by no kvbench code: GPU_STANDIN_GPUS (how many simulated GPUs, default 1) and
GPU_STANDIN_BREAK (`memcpy=half,hbm_read=nothing`: copies or kernels that do nothing or half) and
GPU_STANDIN_CUDART (batch | no-batch | missing: the runtime library the image holds).
"""

from __future__ import annotations

import ctypes

FAKE_LIBRARIES = ("libcuda.so.1",)
_REAL_CDLL = ctypes.CDLL


CUDART_NAMES = ("libcudart.so.13", "/gpu-standin/lib/libcudart.so.13")  # by soname, or where pathfinder says


class _CDLL(_REAL_CDLL):
    def __new__(cls, name, *args, **kwargs):
        if name in CUDART_NAMES:  # the CUDA runtime: the stand-in's (its batch copy), as the image holds it
            from gpu_standin.cudart import library

            return library(name)
        return super().__new__(cls)

    def __init__(self, name, *args, **kwargs) -> None:
        super().__init__(None if name in FAKE_LIBRARIES else name, *args, **kwargs)


def activate() -> None:
    ctypes.CDLL = _CDLL  # type: ignore[misc]


def deactivate() -> None:
    ctypes.CDLL = _REAL_CDLL  # type: ignore[misc]
