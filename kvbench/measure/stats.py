"""Summary statistics of per-operation times (seconds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

CV_WARN = 0.05  # coefficient of variation above which a result is flagged noisy


@dataclass(frozen=True)
class Summary:
    """Statistics of per-operation seconds: p10 is the fast end, p90 the slow end."""

    count: int
    median: float
    p10: float
    p90: float
    mean: float
    stdev: float
    min: float
    max: float

    @property
    def cv(self) -> float:
        """Coefficient of variation (stdev / mean)."""
        return self.stdev / self.mean if self.mean > 0 else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "cv": self.cv}


def summarize(samples_s: Sequence[float]) -> Summary:
    """Summary of `samples_s`; raises ValueError on an empty sequence."""
    values = np.asarray(samples_s, dtype=float)
    if values.size == 0:
        raise ValueError("no samples to summarize")
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    return Summary(
        count=int(values.size),
        median=float(median),
        p10=float(p10),
        p90=float(p90),
        mean=float(values.mean()),
        stdev=float(values.std(ddof=1)) if values.size > 1 else 0.0,
        min=float(values.min()),
        max=float(values.max()),
    )
