"""The stand-in put in front of this process's imports for one test, and taken away after it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.gpu_standin import SITE

MODULES = ("cupy", "torch", "pynvml", "gpu_standin", "cuda")  # cuda: its pathfinder is the stand-in's


def _clear_kvbench_caches() -> None:
    from kvbench.backends import cuda
    from kvbench.executors import cuda_batch

    cuda.cuda_unavailable_reason.cache_clear()
    cuda.kernel_module.cache_clear()
    cuda_batch._entry.cache_clear()  # the runtime entry found in the previous stand-in (or none)


def _ours(name: str) -> bool:
    return name.split(".")[0] in MODULES


@contextmanager
def installed(gpus: int = 1) -> Iterator[object]:
    """The stand-in's machine (`gpu_standin.machine.Machine`) of `gpus` GPUs, importable as cupy,
    torch and pynvml (and libcudart through ctypes) for the block; whatever those names were before comes back."""
    saved = {name: module for name, module in sys.modules.items() if _ours(name)}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(SITE))
    import gpu_standin
    from gpu_standin import machine

    gpu_standin.activate()
    _clear_kvbench_caches()
    try:
        yield machine.reset(gpus)
    finally:
        machine.reset(gpus)
        gpu_standin.deactivate()
        sys.path.remove(str(SITE))
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)
        _clear_kvbench_caches()
