"""Timers: how long `loops` back-to-back calls of an operation take, in seconds.

The monotonic clock times host work; a CUDA-event timer (GPU issue) plugs in the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    name: str

    @property
    def resolution_s(self) -> float:
        """Smallest interval the timer can tell apart, in seconds."""
        ...

    def time(self, op: Callable[[], None], loops: int) -> float:
        """Seconds for `loops` calls of `op`, completed (device work included)."""
        ...

    def overhead_s(self, loops: int) -> float:
        """Seconds the timer and loop add to `loops` calls of an operation that does nothing."""
        ...


class MonotonicTimer:
    """`time.perf_counter_ns` around a plain loop: for work that ends when the call returns."""

    name = "perf_counter"

    @property
    def resolution_s(self) -> float:
        return time.get_clock_info("perf_counter").resolution

    def time(self, op: Callable[[], None], loops: int) -> float:
        clock = time.perf_counter_ns
        start = clock()
        for _ in range(loops):
            op()
        return (clock() - start) * 1e-9

    def overhead_s(self, loops: int) -> float:
        def nothing() -> None:
            return None

        return min(self.time(nothing, loops) for _ in range(3))
