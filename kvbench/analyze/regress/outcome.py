"""The one verdict of a comparison (DESIGN.md, Verdicts; issue 57 item 0): PASS only where a drop of the
threshold's size would have been seen.

A case `ambiguous` on a drop beyond the threshold (within its noise, or within the ranges' overlap) was
not seen either way, and a case `too noisy` (its runs vary beyond a halving, so its allowance is beyond
the cap) could not have seen a halving: neither is "none slower". Such a comparison ends INCOMPLETE,
counting them, with what to do (re-measure, a `--repeat` baseline, a quieter box); a `slower`, `failed`,
`lost` or `missing` case still FAILs it. Identical code whose changes stay inside the threshold is
`same` and passes.
"""

from __future__ import annotations

from typing import Any

from kvbench.analyze.regress.compare import (
    TOO_NOISY,
    TOO_NOISY_ADVICE,
    Comparison,
    has_regression,
    held_back_drops,
    regression_summary,
)
from kvbench.overall import FAIL, INCOMPLETE, PASS, Overall


def unseen_drops(comparisons: list[Comparison]) -> list[Comparison]:
    """The `ambiguous` drops (beyond the threshold, else they would be `same`): a drop the comparison
    neither saw nor ruled out."""
    return [c for c in comparisons if c.verdict == "ambiguous" and (c.judged_change or c.change or 0.0) < 0]


def too_noisy(comparisons: list[Comparison]) -> list[Comparison]:
    """The cases whose runs vary beyond a halving: too noisy to judge here."""
    return [c for c in comparisons if c.verdict == TOO_NOISY]


def compare_overall(comparisons: list[Comparison], base_id: Any, new_id: Any, what: str = "case",
                    require_quiet: bool = False, held_named: str = "", failed_line: str | None = None) -> Overall:
    """FAIL on a case slower, failed, lost or missing (`failed_line`: the line to say, else
    `regression_summary`'s); INCOMPLETE where a drop was held back for contention, left `ambiguous`,
    or a case was too noisy to judge; PASS only where none of those is left."""
    if has_regression(comparisons):
        return Overall(FAIL, (failed_line or regression_summary(comparisons, base_id, new_id),))
    reasons = []
    if held := held_back_drops(comparisons):
        why = ("measured while the box was contended, not judged (--require-quiet)" if require_quiet else
               "that the new run's contention can explain, not judged")
        reasons.append(f"{len(held)} drop(s) beyond the noise {why}: re-measure on a quiet box{held_named}")
    unseen, noisy = unseen_drops(comparisons), too_noisy(comparisons)
    if unseen:
        worst = min(c.judged_change if c.judged_change is not None else c.change or 0.0 for c in unseen)
        reasons.append(f"{len(unseen)} {what}(s) with a drop beyond the threshold within the noise (ambiguous, "
                       f"down to {worst:+.1%}): neither seen nor ruled out")
    if noisy:
        reasons.append(f"{len(noisy)} {what}(s) too noisy to judge here (runs vary beyond a halving)")
    if unseen or noisy:
        reasons.append(TOO_NOISY_ADVICE)
    if reasons:
        return Overall(INCOMPLETE, tuple(reasons))
    return Overall(PASS, (f"{len(comparisons)} {what}(s) compared: none slower, failed, lost or missing",))
