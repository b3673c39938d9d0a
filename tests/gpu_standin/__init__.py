"""A test-only CUDA stand-in: numpy doubles of exactly the cupy, torch, CUDA runtime (ctypes) and
NVML calls kvbench makes, so every GPU path runs in CI without a GPU (docs/gpu-check.md says what it
can and cannot prove: the bytes and the call order, never bandwidth or time).

`SITE` holds the fake modules (`cupy`, `torch`, `pynvml`; libcudart's cudaMemcpyBatchAsync through
ctypes) and the machine behind them (`gpu_standin`). Tests put it in front of sys.path (the `gpu_standin` fixture,
tests/gpu_standin/fixture.py) or on a subprocess's PYTHONPATH (`subprocess_env`). kvbench never
imports it (tests/test_architecture.py), and no kvbench option or variable reaches it.
"""

from __future__ import annotations

import os
from pathlib import Path

SITE = Path(__file__).resolve().parent / "site"


def subprocess_env(gpus: int = 1, breakage: str = "", base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a subprocess that runs on the stand-in (`gpus` simulated GPUs)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), env.get("PYTHONPATH", "")]))
    env["GPU_STANDIN_GPUS"] = str(gpus)
    env["GPU_STANDIN_BREAK"] = breakage
    return env
