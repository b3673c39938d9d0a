"""A measurement: the raw samples of one case and what they mean."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kvbench.measure.stats import Summary, relative_half_width, summarize
from kvbench.metadata import PAIRED, PRECISION


@dataclass(frozen=True)
class Paired:
    """The other side of a ratio the case reports, sampled interleaved with it in the same case
    (pairs in A B, B A order): pair i is the case's `samples_s[i]` beside this side's `samples_s[i]`.

    `against` names the other side by the parameters where it differs from the case (e.g.
    `{"strategy": "contiguous"}`), so an analysis can match it to a rule's side without knowing how
    the benchmark built it.
    """

    against: dict[str, Any]
    samples_s: tuple[float, ...]  # seconds per operation of the other side, pair by pair
    loops: int
    bytes_per_op: int


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
    paired: Paired | None = None
    precision_target: float | None = None  # the stopping rule's target (relative half-width of the median's CI)
    stopped: str = ""  # why sampling stopped: the target reached, the time budget spent, the sample cap

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

    @property
    def precision(self) -> float | None:
        """Relative half-width of the median's 95 % confidence interval (0.01 = ±1 %); None below 6 samples."""
        return relative_half_width(self.samples_s)

    def gbps(self) -> dict[str, float]:
        """Decimal GB/s: median, p10 (slow end) and p90 (fast end)."""
        s = self.summary
        return {
            "median": self.bytes_per_op / s.median / 1e9,
            "p10": self.bytes_per_op / s.p90 / 1e9,
            "p90": self.bytes_per_op / s.p10 / 1e9,
        }

    def ratios(self) -> tuple[float, ...]:
        """This case's rate over the paired side's, pair by pair (empty without a pair)."""
        if self.paired is None:
            return ()
        p = self.paired
        return tuple((self.bytes_per_op / a) / (p.bytes_per_op / b) for a, b in zip(self.samples_s, p.samples_s,
                                                                                      strict=True))

    def record(self) -> dict[str, Any]:
        """What a result's metadata keeps of the stopping rule and the pair (kvbench/metadata.py:
        `precision`, `paired`), plain JSON that analyses read without this module."""
        out: dict[str, Any] = {PRECISION: {"reached": self.precision, "target": self.precision_target,
                                           "samples": len(self.samples_s), "stopped": self.stopped}}
        if self.paired is not None:
            ratios = self.ratios()
            p10, median, p90 = (float(x) for x in np.percentile(ratios, [10, 50, 90]))
            other = summarize(self.paired.samples_s)
            out[PAIRED] = {
                "against": self.paired.against, "median": median, "p10": p10, "p90": p90, "pairs": len(ratios),
                "precision": relative_half_width(ratios), "ratios": list(ratios),
                "against_gbps": {"median": self.paired.bytes_per_op / other.median / 1e9,
                                 "p10": self.paired.bytes_per_op / other.p90 / 1e9,
                                 "p90": self.paired.bytes_per_op / other.p10 / 1e9},
            }
        return out
