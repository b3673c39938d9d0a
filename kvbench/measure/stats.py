"""Summary statistics of per-operation times (seconds)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from statistics import NormalDist

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


CONFIDENCE = 0.95  # of the median's interval that `relative_half_width` measures
MIN_CI_SAMPLES = 6  # below 6 samples no pair of order statistics covers the median with 95 %


@lru_cache(maxsize=512)
def _median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """1-based ranks (lo, hi) of the order statistics bounding the median's `confidence` interval:
    distribution-free (the count of samples below the median is Binomial(n, 1/2)), the tightest
    symmetric pair whose coverage is at least `confidence`; None when n is too small for any."""
    if n < MIN_CI_SAMPLES:
        return None
    tail = (1 - confidence) / 2
    if n > 300:  # the normal approximation of the binomial, exact enough here and O(1)
        lo = max(1, int(math.floor(n / 2 - NormalDist().inv_cdf(1 - tail) * math.sqrt(n) / 2)))
        return lo, n + 1 - lo
    total, below, lo = 2**n, 0, 0
    for k in range(n):  # P(Binomial < lo + 1) ≤ tail: the order statistic lo + 1 still bounds it
        below += math.comb(n, k)
        if below > tail * total:
            break
        lo = k + 1
    return (lo, n + 1 - lo) if lo >= 1 else None


def median_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The median's 95 % (`confidence`) interval (same unit as `values`); None where too few values
    bound it (below 6 for 95 %, below 8 for 99 %)."""
    ranks = _median_ci_ranks(len(values), confidence)
    if ranks is None:
        return None
    ordered = np.sort(np.asarray(values, dtype=float))
    return float(ordered[ranks[0] - 1]), float(ordered[ranks[1] - 1])


def straddled(interval: tuple[float, float], bounds: Iterable[float | None]) -> float | None:
    """The first of `bounds` strictly inside `interval` (low < bound < high): a threshold the interval
    cannot tell the value from; None when it is clear of them all (a None bound is no threshold). One
    rule for the engine's early stop and accept's uncertain verdict, so a stop always means a verdict."""
    low, high = interval
    return next((b for b in bounds if b is not None and low < b < high), None)


def relative_half_width(values: Sequence[float]) -> float | None:
    """Half the width of the median's 95 % confidence interval over the median (a fraction: 0.01 is
    ±1 %), what the engine's stopping rule compares with its target; None below 6 values."""
    ci = median_ci(values)
    median = float(np.median(values)) if ci is not None else 0.0
    if ci is None or median <= 0:
        return None
    return (ci[1] - ci[0]) / 2 / median
