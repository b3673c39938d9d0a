"""The history figure: "Has a benchmark held its level on this host, run after run?" (`kvbench history
--plot`, and every report holding two or more runs of a case)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.analyze.regress.noise import allowance_words
from kvbench.benches.describe import describe_params
from kvbench.metadata import CONTENTION
from kvbench.report.plots import plt, value_text, wrapped


def _history_point(row: dict[str, Any]) -> dict[str, Any]:
    """A stored result row (`store.host_results`) or a run document's result as one history point."""
    extra = row.get("extra") or row.get("metadata") or {}
    median = row["gbps_median"] if "gbps_median" in row else (row.get("gbps") or {}).get("median")
    return {"run": row.get("run_id"), "started_at": row.get("started_at"), "gbps": median,
            "contended": bool((extra.get(CONTENTION) or {}).get("contended")) or bool(row.get("contended"))}


def _run_tick(run: Any, started: Any) -> str:
    day = started.strftime("%m-%d %H:%M") if hasattr(started, "strftime") else str(started or "")[5:16]
    return f"run {value_text(run)}\n{day}" if day else f"run {value_text(run)}"


MAX_RUN_TICKS = 12  # run labels on the x axis; more runs are labelled every k-th


def history_figure(bench: str, found: list[tuple[list[dict[str, Any]], list[Any]]],
                   allowances: list[float | None] | None = None, words: list[str | None] | None = None) -> plt.Figure:
    """Has `bench` held its level? Median GB/s of each case run after run: x is the run (its id and start),
    evenly spaced whatever the wall-clock gaps; points measured while the box was contended are hollow;
    every level segment is drawn flat and each shift marked; the allowance `compare` gives the case
    (`allowances`, |ln(new / base)| per case, from its own verdicts) is drawn as a band around the latest
    level; y starts at 0, so a contended dip is drawn at its size."""
    points = [[_history_point(r) for r in series] for series, _segments in found]
    order = sorted({(p["started_at"] is None, str(p["started_at"]), str(p["run"])): p for ps in points for p in ps}
                   .items())
    runs = list(dict.fromkeys(p["run"] for _key, p in order))
    started = {p["run"]: p["started_at"] for _key, p in order}
    x_of = {run: i for i, run in enumerate(runs)}
    fig, ax = plt.subplots(figsize=(max(8.0, min(0.45 * len(runs) + 3, 16.0)), 4.8))
    hollow_seen = False
    for n, ((series, segments), pts) in enumerate(zip(found, points, strict=True)):
        label = describe_params(bench, series[0]["params"])  # what differs from the defaults
        xs = [x_of[p["run"]] for p in pts]
        ys = [p["gbps"] for p in pts]
        line = ax.plot(xs, ys, lw=1, label=label or "defaults")[0]
        colour = line.get_color()
        solid = [(x, y) for x, y, p in zip(xs, ys, pts, strict=True) if not p["contended"]]
        hollow = [(x, y) for x, y, p in zip(xs, ys, pts, strict=True) if p["contended"]]
        if solid:
            ax.scatter(*zip(*solid, strict=True), color=colour, zorder=3, s=28)
        if hollow:
            hollow_seen = True
            ax.scatter(*zip(*hollow, strict=True), facecolors="white", edgecolors=colour, zorder=3, s=28, lw=1.5)
        for k, seg in enumerate(segments):
            ax.hlines(seg.median, xs[seg.start] - 0.3, xs[seg.end - 1] + 0.3, color=colour, lw=3, alpha=0.35)
            if k:  # a level shift: where the new level starts
                ax.axvline(xs[seg.start] - 0.5, color=colour, ls=":", lw=1)
        allowed = (allowances or [None] * len(found))[n]
        if allowed and segments:
            level, first = segments[-1].median, xs[segments[-1].start]
            ax.fill_between([first - 0.3, xs[-1] + 0.3], level * np.exp(-allowed), level * np.exp(allowed),
                            color=colour, alpha=0.1, lw=0)
    given = [a for a in allowances or [] if a]
    if given:  # stated as every output states it (analyze/noise.allowance_words)
        said = [w for w in words or [] if w]  # the verdict's own words, naming its base (noise.case_allowance)
        text = f": {said[0] if said else allowance_words(given[0])}" if len(given) == 1 else ""
        ax.fill_between([], [], [], color="grey", alpha=0.2, label=f"compare's allowance around the latest level{text}")
    if hollow_seen:
        ax.scatter([], [], facecolors="white", edgecolors="grey", label="hollow: measured while the box was contended")
    step = max(1, -(-len(runs) // MAX_RUN_TICKS))
    shown = list(range(0, len(runs), step))
    ax.set_xticks(shown, [_run_tick(runs[i], started[runs[i]]) for i in shown], fontsize=7)
    ax.set_xlim(-0.7, len(runs) - 0.3)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("run (id, start UTC), in order; evenly spaced")
    ax.set_ylabel(wrapped("GB/s (1e9 B/s), median per run; bands: level segments", 3.8))
    ax.set_title(wrapped(f"Has {bench} held its level on this host, run after run?", fig.get_figwidth() - 1, 12))
    entries = len(ax.get_legend_handles_labels()[1])
    if entries > 4:  # beside the axes, never over the points it explains
        fig.set_figwidth(fig.get_figwidth() + 3.2)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig
