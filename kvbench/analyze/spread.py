"""The one outlier rule of a set of rates (the hosts of a SKU in the fleet, the links of a cluster's
matrix): each rate against the median, in robust standard deviations. A statistic both rooms use, so
it sits among the shared leaves of analyze/, not inside either."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

SD_PER_MAD = 1.4826  # a normal distribution's standard deviation per median absolute deviation


@dataclass(frozen=True)
class RobustSpread:
    """Rates (GB/s) against their median: `sd` is the robust standard deviation (1.4826 × MAD, GB/s),
    `deviations` each rate's fraction from the median, `outliers` those far by both rules."""

    rates: tuple[float, ...]
    median: float
    sd: float
    deviations: tuple[float, ...]
    outliers: tuple[bool, ...]


def robust_spread(rates: list[float], k: float = 3.0, floor: float = 0.05) -> RobustSpread:
    """The one outlier rule of the fleet (hosts of a SKU, and the links of a matrix): a rate stands out
    when at least 3 rates are compared, it is `floor` (a fraction) or more from their median, and more
    than `k` robust standard deviations away (or they all agree but it, MAD = 0)."""
    values = [math.nan if v is None else float(v) for v in rates]  # a few hosts' or links' rates: no numpy
    if not values or any(math.isnan(v) for v in values):  # an unknown rate: no level, so nothing stands out
        median = mad = math.nan
    else:
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values) * SD_PER_MAD
    deviations = tuple(v / median - 1 if median else 0.0 for v in values)
    outliers = tuple(bool(len(values) >= 3 and abs(d) >= floor and (mad == 0 or abs(v - median) > k * mad))
                     for v, d in zip(values, deviations, strict=True))
    return RobustSpread(tuple(values), median, mad, deviations, outliers)
