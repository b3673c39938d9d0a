"""A measurement: the raw samples of one case and what they mean."""

from __future__ import annotations

from dataclasses import dataclass, field

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
