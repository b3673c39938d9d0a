"""`backend=torch` for pcie.h2d / pcie.d2h: the same copies through torch, so the two CUDA
stacks can be compared (they should agree within 3 %). Copy engine only; pinned or pageable."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import numpy as np

from kvbench.backends.cuda import driver_missing_reason
from kvbench.benches.base import Prepared
from kvbench.errors import IntegrityError
from kvbench.hardware import optional
from kvbench.measure.engine import Workload
from kvbench.measure.timer import MonotonicTimer
from kvbench.measure.torch_timer import TorchEventTimer
from kvbench.memory.pattern import POISON, fill_pattern


def torch_unavailable_reason() -> str | None:
    # Asked by `kvbench list` and every plan: importing torch takes seconds, so a host where it is not
    # installed, or without an NVIDIA driver (whose CUDA torch could not see), is told without it.
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return "backend=torch: torch is not installed"
    if driver_missing_reason() is not None:
        return "backend=torch: torch sees no CUDA device"
    try:
        torch = optional.load("torch")
    except ImportError as exc:
        return "backend=torch: " + optional.why(exc, "torch is not installed")
    if not torch.cuda.is_available():
        return "backend=torch: torch sees no CUDA device"
    return None


def prepare_torch(direction: str, memory: str, size: int, gpu: int) -> Prepared:
    import torch

    device = torch.device("cuda", gpu)
    pinned = memory == "pinned"
    host = torch.empty(size, dtype=torch.uint8, pin_memory=pinned)
    fill_pattern(host.numpy(), seed=3)
    dev = torch.empty(size, dtype=torch.uint8, device=device)
    pattern = np.empty(size, dtype=np.uint8)
    fill_pattern(pattern, seed=5)
    stream = torch.cuda.Stream(device=device)

    if direction == "h2d":
        def copy() -> None:
            dev.copy_(host, non_blocking=pinned)
    else:
        dev.copy_(torch.from_numpy(pattern))

        def copy() -> None:
            host.copy_(dev, non_blocking=pinned)

    def run() -> None:
        with torch.cuda.stream(stream):
            copy()

    def reset() -> None:  # fill_ runs on torch's current stream, which `stream` does not wait for
        torch.cuda.synchronize(device)
        (dev if direction == "h2d" else host).fill_(POISON)
        torch.cuda.synchronize(device)

    def check() -> None:
        torch.cuda.synchronize(device)
        ok = (np.array_equal(dev.cpu().numpy(), host.numpy()) if direction == "h2d"
              else np.array_equal(host.numpy(), pattern))
        if not ok:
            raise IntegrityError(f"torch {direction}: copied bytes differ")

    timer = TorchEventTimer(stream) if pinned else MonotonicTimer()
    metadata: dict[str, Any] = {"backend": "torch", "torch": torch.__version__, "timer": timer.name}
    return Prepared(Workload(size, run, reset, check, timer), metadata, lambda: torch.cuda.synchronize(device))
