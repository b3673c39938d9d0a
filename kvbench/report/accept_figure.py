"""The acceptance figure: every judged rule on one axis, measured over its threshold, coloured by verdict.

A rule with a lower bound (a rate, a fraction of peak, a ratio "≥ 0.8 x") is drawn as value ÷ limit: 1.0 is
the threshold, right of it passes. A rule with only an upper bound (replays, "fraction below the fastest")
is drawn as limit ÷ value, so that right of 1.0 passes there too and one axis reads one way; a value of 0
under an upper bound is as far right as the axis goes. A rule that judged nothing (SKIP, INCOMPLETE
without a value) is listed below the axis, grouped by reason, never placed on it as if it had a number.
Where a verdict carries an interval (`low`, `high` in its unit), the interval is drawn as a bar.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

from matplotlib.transforms import blended_transform_factory

from kvbench.report.plots import plt, wrapped

QUESTION = "Does each acceptance rule pass, and by how much (measured over its threshold)?"
COLOURS = {"PASS": "#137333", "FAIL": "#b00020", "SKIP": "#8a6d00", "INCOMPLETE": "#e37400"}
AXIS_MAX = 2.0  # margins beyond 2× the threshold are drawn at the edge with their value written
LABEL_WIDTH = 46  # characters of a row's label per line (rule and case): longer labels wrap, never cut


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
    """A row's label whole (rule and case), wrapped at LABEL_WIDTH characters: never cut."""
    text = v.rule if v.case in ("", "all", None) else f"{v.rule} · {v.case}"
    return "\n".join(textwrap.wrap(text, LABEL_WIDTH, break_on_hyphens=False)) or text


def _unjudged_lines(rows: Sequence[Any], width: int) -> list[str]:
    """The rules that judged nothing, one group per verdict and reason: `SKIP (3) — reason: rule, rule, rule`,
    wrapped at `width` characters, every word kept."""
    groups: dict[tuple[str, str], list[str]] = {}
    for v in rows:
        why = (v.why or v.measured or "no number to judge").strip().split("; ")[0]
        names = groups.setdefault((v.verdict, why), [])
        names.append(v.rule) if v.rule not in names else None
    lines: list[str] = []
    for (word, why), names in sorted(groups.items(), key=lambda g: (g[0][0] != "INCOMPLETE", -len(g[1]), g[0][1])):
        lines += textwrap.wrap(f"{word} ({len(names)}) — {why}: {', '.join(names)}", width, subsequent_indent="    ",
                               break_on_hyphens=False)
    return lines


def _interval(v: Any) -> tuple[float, float] | None:
    low, high = getattr(v, "low", None), getattr(v, "high", None)
    if low is None or high is None:
        return None
    a, b = margin(low, v.limit, v.limit_max), margin(high, v.limit, v.limit_max)
    if a is None or b is None:
        return None
    return (min(a, b), max(a, b))


def acceptance_figure(verdicts: Sequence[Any]) -> plt.Figure | None:
    """The judged rules as bars on the axis measured ÷ threshold (FAIL first, then INCOMPLETE, PASS), each
    label whole and each value written in the margin right of the axis, clear of its interval's whisker and
    of the 1.0 line; the rules that judged nothing (SKIP, INCOMPLETE without a number) listed compactly below,
    grouped by reason. None without verdicts."""
    if not verdicts:
        return None
    order = {"FAIL": 0, "INCOMPLETE": 1, "SKIP": 2, "PASS": 3}
    ranked = sorted(verdicts, key=lambda v: (order.get(v.verdict, 4), v.rule, v.case))
    judged = [v for v in ranked if margin(v.value, v.limit, v.limit_max) is not None]
    others = _unjudged_lines([v for v in ranked if margin(v.value, v.limit, v.limit_max) is None], 135)
    heights = [0.12 + 0.13 * (_label(v).count("\n") + 1) for v in judged]
    plot_in = sum(heights) + 0.9 if judged else 0.0
    list_in = 0.16 * len(others) + 0.35 if others else 0.0
    fig = plt.figure(figsize=(9, 0.7 + plot_in + list_in))
    grid = fig.add_gridspec(2 if judged and others else 1, 1,
                            height_ratios=[plot_in, list_in] if judged and others else None)
    if judged:
        ax = fig.add_subplot(grid[0])
        ys = [sum(heights[:i]) + heights[i] / 2 for i in range(len(judged))]
        for y, h, v in zip(ys, heights, judged, strict=True):
            colour, m = COLOURS.get(v.verdict, "grey"), margin(v.value, v.limit, v.limit_max)
            ax.barh(y, min(m, AXIS_MAX), color=colour, alpha=0.8, height=min(0.6 * h, 0.22))
            if (iv := _interval(v)) is not None:
                ax.plot([min(iv[0], AXIS_MAX), min(iv[1], AXIS_MAX)], [y, y], color="black", lw=1.5)
            text = "∞" if math.isinf(m) else f"{m:.2f}×"
            ax.text(1.01, y, f"{text} {v.verdict}", va="center", fontsize=7, color=colour,
                    transform=blended_transform_factory(ax.transAxes, ax.transData))  # in the margin, clear of all
        ax.axvline(1.0, color="black", ls="--", lw=1)
        ax.set_yticks(ys, [_label(v) for v in judged], fontsize=7)
        ax.set_ylim(sum(heights), 0)  # the first row (a FAIL, if any) at the top
        ax.set_xlim(0, AXIS_MAX * 1.05)
        ax.set_xlabel(f"measured ÷ threshold, right of 1 passes (upper bounds: threshold ÷ measured; cut at "
                      f"{AXIS_MAX:.0f}×)", fontsize=8)
    if others:
        box = fig.add_subplot(grid[-1])
        box.axis("off")
        box.text(0, 1, f"Not judged here ({sum(1 for v in ranked if margin(v.value, v.limit, v.limit_max) is None)} "
                 "rule rows):\n" + "\n".join(others), va="top", ha="left", fontsize=7, transform=box.transAxes,
                 color=COLOURS["SKIP"])
    fig.suptitle(wrapped(QUESTION, fig.get_figwidth(), 10), fontsize=10)
    fig.tight_layout()
    if others:  # the list spans the figure's width, not the axis's
        where = box.get_position()
        box.set_position([0.02, where.y0, 0.96, where.height])
    return fig
