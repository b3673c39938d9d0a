"""Regressions between two runs: statistically significant on the raw samples (Mann-Whitney U)
*and* practically significant (a floor, 5 % by default), only like with like.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from kvbench.analyze.runs import RunDocument
from kvbench.errors import BadInput

P_LIMIT = 0.01
THRESHOLD = 0.05
MAX_CV = 0.10  # samples noisier than this are reported, not gated


@dataclass(frozen=True)
class Comparison:
    bench: str
    params: dict[str, Any]
    case: str
    base_gbps: float | None
    new_gbps: float | None
    change: float | None  # relative change of the median rate (new / base - 1)
    p_value: float | None
    verdict: str  # regression | improvement | unchanged | noisy | too-few-samples | new | missing | not-ok
    # `missing` (a case the base had and the new run lacks) gates like a regression: a run that
    # stopped part-way, or a case that stopped being measured, must not pass for unchanged.
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p Mann-Whitney U can give for these sample counts."""
    return 2 / math.comb(n1 + n2, n1)


def check_comparable(base: RunDocument, new: RunDocument, cross_host: bool = False) -> None:
    """Refuse runs from different hosts or contexts unless asked: only like is compared with like."""
    b, n = base["run"], new["run"]
    if b["host_id"] != n["host_id"] and not cross_host:
        raise BadInput(f"runs {b['id']} and {n['id']} come from different hosts ({b['host_id'][:12]}… vs "
                       f"{n['host_id'][:12]}…): a regression needs the same box; pass --cross-host to compare anyway")
    if b["context_id"] != n["context_id"] and not cross_host:
        raise BadInput(f"runs {b['id']} and {n['id']} have different contexts (driver, CUDA, library versions): "
                       f"that starts a new history; pass --cross-host to compare anyway")


def _cv(samples: list[float]) -> float:
    arr = np.asarray(samples)
    return float(arr.std(ddof=1) / arr.mean()) if arr.size > 1 and arr.mean() > 0 else 0.0


def compare_case(base: dict[str, Any], new: dict[str, Any], threshold: float = THRESHOLD,
                 p_limit: float = P_LIMIT, max_cv: float = MAX_CV) -> Comparison:
    head = {"bench": new["bench"], "params": new["params"], "case": new["case"]}
    if base["status"] != "ok" or new["status"] != "ok":
        return Comparison(**head, base_gbps=None, new_gbps=None, change=None, p_value=None, verdict="not-ok",
                          note=f"base {base['status']}, new {new['status']}")
    b_rate, n_rate = base["gbps"]["median"], new["gbps"]["median"]
    change = n_rate / b_rate - 1
    b_s, n_s = base.get("samples_s") or [], new.get("samples_s") or []
    out = {**head, "base_gbps": b_rate, "new_gbps": n_rate, "change": change}
    if len(b_s) < 2 or len(n_s) < 2 or min_p_value(len(b_s), len(n_s)) > p_limit:
        return Comparison(**out, p_value=None, verdict="too-few-samples",
                          note=f"{len(b_s)} vs {len(n_s)} samples cannot reach p < {p_limit}")
    p = float(mannwhitneyu(b_s, n_s, alternative="two-sided").pvalue)
    worst_cv = max(_cv(b_s), _cv(n_s))
    if worst_cv > max_cv:
        return Comparison(**out, p_value=p, verdict="noisy", note=f"CV {worst_cv:.0%} > {max_cv:.0%}: not gated")
    if p < p_limit and abs(change) >= threshold:
        return Comparison(**out, p_value=p, verdict="regression" if change < 0 else "improvement")
    return Comparison(**out, p_value=p, verdict="unchanged")


def compare_runs(base: RunDocument, new: RunDocument, threshold: float = THRESHOLD,
                 cross_host: bool = False) -> list[Comparison]:
    """Every case of either run, matched by case id."""
    check_comparable(base, new, cross_host)
    base_by_case = {r["case"]: r for r in base["results"]}
    new_by_case = {r["case"]: r for r in new["results"]}
    out = []
    for case, new_row in new_by_case.items():
        if case in base_by_case:
            out.append(compare_case(base_by_case[case], new_row, threshold))
        else:
            out.append(Comparison(new_row["bench"], new_row["params"], case, None,
                                  (new_row.get("gbps") or {}).get("median"), None, None, "new"))
    partial = new["run"].get("partial")
    for case, base_row in base_by_case.items():
        if case not in new_by_case:
            note = f"not in run {new['run']['id']}" + (f" ({partial})" if partial else "")
            out.append(Comparison(base_row["bench"], base_row["params"], case,
                                  (base_row.get("gbps") or {}).get("median"), None, None, None, "missing", note))
    return out


GATING = ("regression", "missing")


def has_regression(comparisons: list[Comparison]) -> bool:
    """Whether CI should fail: a regression, or a case the new run is missing."""
    return any(c.verdict in GATING for c in comparisons)
