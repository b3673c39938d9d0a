"""cuda.pathfinder as the kvbench GPU stand-in answers it (TEST ONLY): where the CUDA runtime library
is. `machine.cudart` (GPU_STANDIN_CUDART) says what the image holds: "batch" (a 13.0 runtime with
cudaMemcpyBatchAsync), "no-batch" (a runtime without it), "missing" (none the loader or the wheels
can find). `cuda` has no __init__ here, so it joins the installed namespace package."""

from __future__ import annotations

from dataclasses import dataclass

from gpu_standin.machine import machine

CUDART_PATH = "/gpu-standin/lib/libcudart.so.13"  # answered by gpu_standin's ctypes.CDLL, no such file


class DynamicLibNotFoundError(RuntimeError):
    pass


@dataclass
class LoadedDL:
    abs_path: str | None
    was_already_loaded_from_elsewhere: bool
    _handle_uint: int
    found_via: str


def load_nvidia_dynamic_lib(libname: str) -> LoadedDL:
    if libname != "cudart" or machine().cudart == "missing":
        raise DynamicLibNotFoundError(f"Failure finding lib{libname}.so: the stand-in's image has none "
                                      "(GPU_STANDIN_CUDART=missing)")
    return LoadedDL(CUDART_PATH, False, 0, "site-packages")
