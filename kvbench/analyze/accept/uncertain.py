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


def _interval(verdict: Verdict, by_case: dict[str, dict[str, Any]]) -> tuple[float, float, float] | None:
    """(median, low, high) of the ratio a ratio verdict judged, from its case's per-pair ratios; None
    where it judged no paired ratio (two medians divided, or too few pairs for an interval)."""
    if verdict.unit != "x" or verdict.value is None or not verdict.cases:
        return None
    record = ((by_case.get(verdict.cases[0]) or {}).get("metadata") or {}).get(PAIRED) or {}
    ratios = record.get("ratios") or []
    if record.get("median") is None or abs(record["median"] - verdict.value) > 1e-9 * max(1.0, abs(verdict.value)):
        return None
    ci = median_ci(ratios)
    return (verdict.value, *ci) if ci is not None else None


def _straddled(verdict: Verdict, interval: tuple[float, float, float]) -> float | None:
    """The threshold the interval straddles (its low or high bound), None when it clears both."""
    _median, low, high = interval
    return straddled((low, high), (verdict.limit, verdict.limit_max))


def straddling(verdicts: list[Verdict], doc: RunDocument) -> list[tuple[Verdict, tuple[float, float, float], float]]:
    """The PASS and FAIL verdicts whose ratio's interval straddles their threshold, with it and the bound."""
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


def name_uncertain(verdicts: list[Verdict], doc: RunDocument, resampled_in: int | None) -> list[Verdict]:
    """Each verdict whose ratio's interval straddles its threshold as INCOMPLETE (uncertain), with the
    median and both ends; `resampled_in`: the run that re-sampled its case (None: not re-sampled)."""
    found = {id(v): (interval, bound) for v, interval, bound in straddling(verdicts, doc)}
    out = []
    for v in verdicts:
        if id(v) not in found:
            out.append(v)
            continue
        (median, low, high), bound = found[id(v)]
        after = (f"after re-sampling in run {resampled_in} (budget {RESAMPLE_BUDGET_S:g} s)" if resampled_in is not None
                 else "not re-sampled: a stored run; on its host, accept --run RUN --measure-again measures it again")
        out.append(replace(v, verdict="INCOMPLETE", low=low, high=high,
                           measured=f"{median:.3f} x (paired; 95 % interval {low:.3f}–{high:.3f})",
                           why=f"{UNCERTAIN}: the ratio's 95 % interval {low:.3f}–{high:.3f} x straddles {bound:g} x, "
                               f"{after}; it would have been {v.verdict}"))
    return out
