"""History of one case on one host, cut into segments where the level persistently shifts.

A shift starts a new segment only when it is at least `threshold` away from the current
segment's median and the next point confirms it; a one-off outlier does not (asv's idea,
kept simple). Each run is also judged against the run before it by `compare`'s own verdict
(`run_verdicts`), so `history` and `compare` agree on every consecutive pair.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.regress.compare import Comparison, compare_case
from kvbench.store.records import ResultRecord

THRESHOLD = 0.05
HISTORY_RUNS = 20  # the earlier runs a comparison weighs, as the store's case_fast_ends gives them


@dataclass(frozen=True)
class Segment:
    start: int  # index of the first point
    end: int  # index after the last point
    median: float


def _off(value: float, level: float, threshold: float) -> int:
    """+1 / -1 when `value` is above / below `level` by at least `threshold` (relative), else 0."""
    if level == 0:
        return 0
    change = value / level - 1
    return 0 if abs(change) < threshold else (1 if change > 0 else -1)


def segments(values: list[float], threshold: float = THRESHOLD, confirm: int = 2) -> list[Segment]:
    """Segments of `values` (e.g. median GB/s per run, oldest first)."""
    if not values:
        return []
    cuts = [0]
    start = 0
    i = 1
    while i < len(values):
        level = float(statistics.median(values[start:i]))
        side = _off(values[i], level, threshold)
        window = values[i : i + confirm]
        if side and len(window) == confirm and all(_off(v, level, threshold) == side for v in window):
            cuts.append(i)
            start = i
        i += 1
    cuts.append(len(values))
    return [Segment(a, b, float(statistics.median(values[a:b]))) for a, b in zip(cuts, cuts[1:], strict=False)]


def run_verdicts(series: list[dict[str, Any]], threshold: float = THRESHOLD) -> list[Comparison | None]:
    """For each stored result row of one case (oldest first, `store.host_results`), `compare`'s
    verdict from the run before it, weighed against the earlier runs of its context (their fast
    ends, contended or not) as `compare` weighs it; None for the first run and for a run whose context differs from its predecessor's
    (a new history, which `compare` refuses without --cross-host)."""
    out: list[Comparison | None] = [None] if series else []
    for i in range(1, len(series)):
        prev, row = series[i - 1], series[i]
        if prev.get("context_id") != row.get("context_id"):
            out.append(None)
            continue
        earlier = [r.get("gbps_p90") or r["gbps_median"] for r in series[:i]  # fast ends, as case_fast_ends
                   if r.get("context_id") == row.get("context_id")]
        out.append(compare_case(ResultRecord.from_row(prev).to_json(), ResultRecord.from_row(row).to_json(),
                                threshold, earlier[-HISTORY_RUNS:]))
    return out
