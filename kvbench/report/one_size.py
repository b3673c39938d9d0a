"""A benchmark measured at one transfer size only (an acceptance run: `dram.copy` at 256 MiB) over several
runs: one panel with a point per run and case, its p10–p90 bar inside the panel, instead of a panel per run
holding one point each under a legend that says `all` (issue 57 item 14)."""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402


def _run_name(run: Any) -> str:
    return "?" if run is None or run != run else f"run {int(run) if isinstance(run, float) and run.is_integer() else run}"


def rate_by_run(frame: pd.DataFrame, bench: str, size_text: str) -> plt.Figure:
    """`frame` (plots.results_frame's rows of `bench`, with `series` and `run`) at its one size: x the runs in
    order, y the median GB/s with its p10–p90 bar; one colour per case, a legend only where cases differ."""
    runs = sorted(frame["run"].dropna().unique(), key=str) if "run" in frame else []
    where = {run: i for i, run in enumerate(runs)}
    cases = sorted(frame["series"].unique())
    colours = dict(zip(cases, sns.color_palette(n_colors=len(cases)), strict=True))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(runs) + 2.5), 4.2))
    width = 0.6 / max(len(cases), 1)
    for k, (case, rows) in enumerate(frame.groupby("series")):
        x = [where.get(r, 0) - 0.3 + width * (k + 0.5) for r in rows.get("run", pd.Series([None] * len(rows)))]
        ax.errorbar(x, rows["gbps"], yerr=[rows["gbps"] - rows["p10"], rows["p90"] - rows["gbps"]], fmt="o",
                    capsize=3, color=colours[case], label=case if len(cases) > 1 else "median; bar p10–p90")
    peak = frame["peak_gbps"].dropna() if "peak_gbps" in frame else pd.Series(dtype=float)
    if not peak.empty:
        ax.axhline(peak.max(), color="black", ls="--", lw=1, label=f"spec peak {peak.max():.1f} GB/s")
        ax.axhspan(0.8 * peak.max(), peak.max(), color="green", alpha=0.08, label="80–100 % of peak")
    top = max(frame["p90"].max(), peak.max() if not peak.empty else 0.0)
    ax.set_ylim(0, 1.08 * top)  # every bar inside its panel, the axis from 0
    ax.set_xticks(range(len(runs)) or [0], [_run_name(r) for r in runs] or ["this run"])
    ax.set_xlim(-0.6, max(len(runs), 1) - 0.4)
    ax.set_ylabel("GB/s (1e9 B/s)")
    ax.set_xlabel(f"run (every case at {size_text})")
    ax.legend(fontsize=7)
    title = f"How fast does {bench} move bytes at {size_text}, run by run? (one transfer size measured)"
    ax.set_title("\n".join(textwrap.wrap(title, int(fig.get_figwidth() * 72 / 7.2))), fontsize=11)
    fig.tight_layout()
    return fig
