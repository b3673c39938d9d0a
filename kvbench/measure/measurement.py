"""A measurement: the raw samples of one case and what they mean."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvbench.measure.stats import Summary, summarize


@dataclass(frozen=True)
class Measurement:
    """Per-operation seconds of every sample, with how they were taken.

    Each sample timed `loops` operations back to back; `samples_s` holds seconds per operation.
    """

    samples_s: tuple[float, ...]
    loops: int
    bytes_per_op: int
    timer: str
    overhead_fraction: float
    verified: bool
    warnings: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    request_s: tuple[float, ...] = ()  # single operations timed one by one (Workload.requests), seconds

    def request_ms(self) -> dict[str, float] | None:
        """p50, p90, p99 and max of the single operations in ms, with their count; None if none were timed."""
        if not self.request_s:
            return None
        ms = np.asarray(self.request_s) * 1e3
        p50, p90, p99 = np.percentile(ms, [50, 90, 99])
        return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(ms.max()), "n": len(ms)}

    @property
    def summary(self) -> Summary:
        return summarize(self.samples_s)

    def gbps(self) -> dict[str, float]:
        """Decimal GB/s: median, p10 (slow end) and p90 (fast end)."""
        s = self.summary
        return {
            "median": self.bytes_per_op / s.median / 1e9,
            "p10": self.bytes_per_op / s.p90 / 1e9,
            "p90": self.bytes_per_op / s.p10 / 1e9,
        }
