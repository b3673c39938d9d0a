"""History of one case on one host, cut into segments where the level persistently shifts.

A shift starts a new segment only when it is at least `threshold` away from the current
segment's median and the next point confirms it; a one-off outlier does not (asv's idea,
kept simple). Each run is also judged against the run before it by `compare`'s own verdict
(`run_verdicts`), so `history` and `compare` agree on every consecutive pair.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.regress.compare import FAST_END, Comparison, compare_case
from kvbench.analyze.regress.noise import allowance_words
from kvbench.metadata import CONTENTION
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


def contended(row: dict[str, Any]) -> bool:
    """Whether a stored result row (`extra`) or a run document's result (`metadata`) was measured contended."""
    record = (row.get("extra") or row.get("metadata") or {}).get(CONTENTION) or {}
    return bool(record.get("contended"))


def _quiet(values: list[float], flags: list[bool]) -> list[float]:
    """The values measured quiet, or all of them where none was."""
    return [v for v, busy in zip(values, flags, strict=True) if not busy] or values


def segments(values: list[float], threshold: float = THRESHOLD, confirm: int = 2,
             busy: list[bool] | None = None) -> list[Segment]:
    """Segments of `values` (e.g. median GB/s per run, oldest first); `busy`: which were measured contended.
    A contended run never starts a level nor confirms one, and a level is the median of its quiet runs
    (issue 57 item 11: a neighbour's burst cut identical code into level segments)."""
    if not values:
        return []
    flags = list(busy) if busy is not None else [False] * len(values)
    cuts = [0]
    start = 0
    for i in range(1, len(values)):
        if flags[i]:
            continue
        level = float(statistics.median(_quiet(values[start:i], flags[start:i])))
        side = _off(values[i], level, threshold)
        window = [v for v, f in zip(values[i:], flags[i:], strict=True) if not f][:confirm]
        if side and len(window) == confirm and all(_off(v, level, threshold) == side for v in window):
            cuts.append(i)
            start = i
    cuts.append(len(values))
    return [Segment(a, b, float(statistics.median(_quiet(values[a:b], flags[a:b]))))
            for a, b in zip(cuts, cuts[1:], strict=False)]


def series_segments(series: list[dict[str, Any]], threshold: float = THRESHOLD) -> list[Segment]:
    """The level segments of one case's results (stored rows or a document's results), oldest first."""
    values = [r["gbps_median"] if "gbps_median" in r else r["gbps"]["median"] for r in series]
    return segments(values, threshold, busy=[contended(r) for r in series])


def verdict_words(c: Comparison) -> str:
    """A run's verdict from the run before, with the number it judged beside it (the fast end's where
    contention could fake the change, the median's too), and why where the word and the number seem to
    disagree: "ambiguous -30.0% (ranges overlap); a drop beyond …". The allowance as every output states it."""
    judged = c.judged_change if c.judged_change is not None else c.change
    text = f"{c.verdict} {judged:+.1%}"
    if c.estimator == FAST_END and c.change is not None:
        text += f" on the fast end (median {c.change:+.1%})"
    why = []
    if (c.verdict == "ambiguous" and c.allowance_ln is not None and judged is not None and judged > -1
            and abs(math.log1p(judged)) >= c.allowance_ln):
        why.append("ranges overlap")
    allowed = c.allowance or (allowance_words(c.allowance_ln) if c.allowance_ln is not None else None)
    return "; ".join([text + (f" ({why[0]})" if why else ""), *([allowed] if allowed else [])])


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
