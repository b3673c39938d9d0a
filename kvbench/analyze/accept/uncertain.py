"""Verdicts too close to call: a ratio rule whose measured ratio has a 95 % interval that straddles its
threshold is neither a PASS nor a FAIL an engineer can trust ("0.97 x against ≥ 0.8 x" with pairs from
0.51 to 1.01).

The interval is the median's distribution-free 95 % confidence interval over the case's per-pair ratios
(kvbench/measure/stats.py `median_ci`: order statistics of the binomial count below the median; the
same interval the measurement's stopping rule tightens; docs/measurement.md). `accept` first
re-samples such a case: it runs again until its ratio's interval is clear of the threshold (the engine's
`ratio_bounds`) or the re-sampling budget RESAMPLE_BUDGET_S is spent. Not to a precision worked out
from the first run's median: beside a busy neighbour the ratio's median moves between runs (1.27 x,
then 0.97 x against ≥ 0.8 x in one trial, docs/contention.md), and a precision that would have cleared
the first median stopped the re-sample while the second still straddled. A verdict that still
straddles is INCOMPLETE (uncertain), with the median and both ends of its interval. A stored run
judged with `--run` is not re-sampled, and says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvbench.analyze.accept.judge import Verdict
from kvbench.analyze.runs import RunDocument
from kvbench.measure.stats import median_ci, straddled
from kvbench.metadata import PAIRED

UNCERTAIN = "uncertain"  # how an uncertain verdict's `why` begins
RESAMPLE_BUDGET_S = 60.0  # seconds of timed sampling one re-sampled case may spend (both sides of its pair)


def is_uncertain(verdict: Verdict) -> bool:
    return verdict.verdict == "INCOMPLETE" and verdict.why.startswith(UNCERTAIN)


def _interval(verdict: Verdict, by_case: dict[str, dict[str, Any]]) -> tuple[float, float | None, float | None, int] | None:
    """(median, low, high, pairs) of the ratio a ratio verdict judged, from its case's per-pair ratios (low and
    high None where too few pairs bound it: below 6 for 95 %); None where it judged no paired ratio (two
    medians divided)."""
    if verdict.unit != "x" or verdict.value is None or not verdict.cases:
        return None
    record = ((by_case.get(verdict.cases[0]) or {}).get("metadata") or {}).get(PAIRED) or {}
    ratios = record.get("ratios") or []
    if (not ratios or record.get("median") is None
            or abs(record["median"] - verdict.value) > 1e-9 * max(1.0, abs(verdict.value))):
        return None
    ci = median_ci(ratios)
    return (verdict.value, *ci, len(ratios)) if ci is not None else (verdict.value, None, None, len(ratios))


def _straddled(verdict: Verdict, interval: tuple[float, float | None, float | None, int]) -> float | None:
    """The threshold the interval straddles (its low or high bound), None when it clears both; too few
    pairs to bound the ratio straddle every threshold (issue 57 item 4: 5 pairs judged as exact)."""
    _median, low, high, _pairs = interval
    if low is None or high is None:
        return next((b for b in (verdict.limit, verdict.limit_max) if b is not None), None)
    return straddled((low, high), (verdict.limit, verdict.limit_max))


def straddling(verdicts: list[Verdict], doc: RunDocument) -> list[tuple[Verdict, tuple, float]]:
    """The PASS and FAIL verdicts whose ratio's interval straddles their threshold (or that too few pairs
    bound), with it and the bound."""
    by_case = {r["case"]: r for r in doc["results"] if r.get("case")}
    out = []
    for v in verdicts:
        if v.verdict in ("PASS", "FAIL") and (interval := _interval(v, by_case)) is not None:
            bound = _straddled(v, interval)
            if bound is not None:
                out.append((v, interval, bound))
    return out


def resample_plan(verdicts: list[Verdict], doc: RunDocument) -> tuple[list[str], tuple[float, ...]]:
    """(case ids to re-sample, the thresholds their ratios' intervals straddle): each case then samples
    until its ratio's interval is clear of them (kvbench/measure/engine.py `ratio_bounds`)."""
    cases: dict[str, None] = {}
    bounds: dict[float, None] = {}
    for v, _interval, bound in straddling(verdicts, doc):
        cases[v.cases[0]] = None  # the case that measured the ratio: it times its other side interleaved with it
        bounds[bound] = None
    return list(cases), tuple(bounds)


def _with_interval(v: Verdict, by_case: dict[str, dict[str, Any]]) -> Verdict:
    """A ratio verdict that stands, with its 95 % interval as numbers (`low`, `high`) and in its text."""
    if v.low is not None or (interval := _interval(v, by_case)) is None or interval[1] is None:
        return v
    median, low, high, _pairs = interval
    return replace(v, low=low, high=high, measured=f"{median:.3f} x (paired; 95 % interval {low:.3f}–{high:.3f})")


def name_uncertain(verdicts: list[Verdict], doc: RunDocument, resampled_in: int | None) -> list[Verdict]:
    """Each verdict whose ratio's interval straddles its threshold, or whose pairs are too few to bound
    it, as INCOMPLETE (uncertain), with the median and both ends; every other ratio verdict with its
    interval (a PASS too); `resampled_in`: the run that re-sampled its case (None: not re-sampled)."""
    found = {id(v): (interval, bound) for v, interval, bound in straddling(verdicts, doc)}
    by_case = {r["case"]: r for r in doc["results"] if r.get("case")}
    out = []
    for v in verdicts:
        if id(v) not in found:
            out.append(_with_interval(v, by_case))
            continue
        (median, low, high, pairs), bound = found[id(v)]
        after = (f"after re-sampling in run {resampled_in} (budget {RESAMPLE_BUDGET_S:g} s)" if resampled_in is not None
                 else "not re-sampled: a stored run; on its host, accept --run RUN --measure-again measures it again")
        if low is None or high is None:
            out.append(replace(v, verdict="INCOMPLETE", measured=f"{median:.3f} x (paired; {pairs} pairs, no interval)",
                               why=f"{UNCERTAIN}: {pairs} pairs: too few to bound the ratio (a 95 % interval needs 6), "
                                   f"{after}; it would have been {v.verdict}"))
            continue
        out.append(replace(v, verdict="INCOMPLETE", low=low, high=high,
                           measured=f"{median:.3f} x (paired; 95 % interval {low:.3f}–{high:.3f})",
                           why=f"{UNCERTAIN}: the ratio's 95 % interval {low:.3f}–{high:.3f} x straddles {bound:g} x, "
                               f"{after}; it would have been {v.verdict}"))
    return out
