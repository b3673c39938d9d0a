"""The acceptance figure: every judged rule on one axis, measured over its threshold, coloured by verdict.

A rule with a lower bound (a rate, a fraction of peak, a ratio "≥ 0.8 x") is drawn as value ÷ limit: 1.0 is
the threshold, right of it passes. A rule with only an upper bound (replays, "fraction below the fastest")
is drawn as limit ÷ value, so that right of 1.0 passes there too and one axis reads one way; a value of 0
under an upper bound is as far right as the axis goes. A rule that judged nothing (SKIP, INCOMPLETE
without a value) is listed on the left with its word, never placed on the axis as if it had a number.
Where a verdict carries an interval (`low`, `high` in its unit), the interval is drawn as a bar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kvbench.report.plots import plt, wrapped

QUESTION = "Does each acceptance rule pass, and by how much (measured over its threshold)?"
COLOURS = {"PASS": "#137333", "FAIL": "#b00020", "SKIP": "#8a6d00", "INCOMPLETE": "#e37400"}
AXIS_MAX = 2.0  # margins beyond 2× the threshold are drawn at the edge with their value written
LABEL_MAX = 60  # characters of a row's label (rule and case); the rest is in the table below the figure


def margin(value: float | None, limit: float | None, limit_max: float | None) -> float | None:
    """How far `value` is from its threshold as a factor where > 1 passes: value/limit for a lower bound,
    limit_max/value for an upper bound alone (inf for 0); None where the rule carries no number."""
    if value is None or not math.isfinite(value):
        return None
    if limit is not None and limit > 0:
        return value / limit
    if limit_max is not None and limit_max >= 0:
        return math.inf if value <= 0 else limit_max / value
    return None


def _label(v: Any) -> str:
    text = v.rule if v.case in ("", "all", None) else f"{v.rule} · {v.case}"
    return text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…"


def _interval(v: Any) -> tuple[float, float] | None:
    low, high = getattr(v, "low", None), getattr(v, "high", None)
    if low is None or high is None:
        return None
    a, b = margin(low, v.limit, v.limit_max), margin(high, v.limit, v.limit_max)
    if a is None or b is None:
        return None
    return (min(a, b), max(a, b))


def acceptance_figure(verdicts: Sequence[Any]) -> plt.Figure | None:
    """One row per verdict (FAIL first, then INCOMPLETE, SKIP, PASS), on the axis measured ÷ threshold; None
    without verdicts."""
    if not verdicts:
        return None
    order = {"FAIL": 0, "INCOMPLETE": 1, "SKIP": 2, "PASS": 3}
    rows = sorted(verdicts, key=lambda v: (order.get(v.verdict, 4), v.rule, v.case))
    height = 1.2 + 0.32 * len(rows)
    fig, ax = plt.subplots(figsize=(9, height))
    for y, v in enumerate(rows):
        colour = COLOURS.get(v.verdict, "grey")
        m = margin(v.value, v.limit, v.limit_max)
        if m is None:
            why = (v.why or v.measured or "").strip().split("; ")[0]
            why = why if len(why) <= 70 else why[:69] + "…"
            ax.text(0.02, y, f"{v.verdict}: {why or 'no number to judge'}", va="center", fontsize=7, color=colour,
                    clip_on=True)
            continue
        shown = min(m, AXIS_MAX)
        ax.barh(y, shown, color=colour, alpha=0.8, height=0.6)
        if (iv := _interval(v)) is not None:
            ax.plot([min(iv[0], AXIS_MAX), min(iv[1], AXIS_MAX)], [y, y], color="black", lw=1.5)
        text = "∞" if math.isinf(m) else f"{m:.2f}×"
        ax.text(min(shown, AXIS_MAX) + 0.02, y, f"{text} {v.verdict}", va="center", fontsize=7, color=colour,
                clip_on=True)
    ax.axvline(1.0, color="black", ls="--", lw=1)
    ax.set_yticks(range(len(rows)), [_label(v) for v in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row (a FAIL, if any) at the top
    ax.set_xlim(0, AXIS_MAX + 0.35)
    ax.set_xlabel(f"measured ÷ threshold, right of 1 passes (upper bounds: threshold ÷ measured; cut at {AXIS_MAX:.0f}×)",
                  fontsize=8)
    fig.suptitle(wrapped(QUESTION, fig.get_figwidth(), 10), fontsize=10)
    fig.tight_layout()
    return fig
