"""The link matrix of each cluster run as a heatmap: "Which links are slow?". Cells are the median GB/s of
each directed pair (analyze/links/link_matrix.py); slow links are outlined and marked, a pair without a rate
is left blank and named (failed, skipped, missing) — never coloured as 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import seaborn as sns
from matplotlib.patches import Rectangle

from kvbench.analyze.links.link_matrix import LinkMatrix, link_matrices
from kvbench.report.plots import plt
from kvbench.store.records import result_row

QUESTION = "Which links are slow?"
_REASONS_SHOWN = 6  # the rest are one `kvbench fleet --pairs --run N` away


def run_matrices(results: list[dict[str, Any]]) -> list[LinkMatrix]:
    """The matrices of every run among report `results` (run document results carrying `run_id`)."""
    rows = [{**result_row(r), "run_id": r.get("run_id"), "id": n} for n, r in enumerate(results)]
    runs = sorted({row["run_id"] for row in rows}, key=lambda run: (run is None, str(run)))
    return [m for run in runs for m in link_matrices([row for row in rows if row["run_id"] == run], run)]


def _panel(ax, m: LinkMatrix) -> None:
    n = len(m.hosts)
    rates = np.full((n, n), np.nan)
    labels = np.full((n, n), "", dtype=object)
    for c in m.cells:
        i, j = m.hosts.index(c.src_host), m.hosts.index(c.dst_host)
        if c.status == "ok":
            rates[i, j] = c.gbps
            labels[i, j] = f"{c.gbps:.3g}" + ("\nSLOW" if c.slow else "")
        else:
            labels[i, j] = c.status
    sns.heatmap(rates, annot=labels, fmt="", cmap="viridis", ax=ax, xticklabels=m.hosts, yticklabels=m.hosts,
                cbar_kws={"label": "GB/s (1e9 B/s)"}, mask=np.isnan(rates), linewidths=0.5, linecolor="white")
    for (i, j), text in np.ndenumerate(labels):  # heatmap annotates only unmasked cells
        if np.isnan(rates[i, j]) and text:
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=9, color="dimgray")
    for c in m.cells:
        if c.slow:
            ax.add_patch(Rectangle((m.hosts.index(c.dst_host), m.hosts.index(c.src_host)), 1, 1, fill=False,
                                   edgecolor="red", linewidth=2.5))
    ax.set_xlabel("destination host")
    ax.set_ylabel("source host")
    run = (f"{m.run_id} · " if isinstance(m.run_id, str) else f"run {m.run_id} · ") if m.run_id is not None else ""
    slow = sum(c.slow for c in m.cells)
    hosts = f"; most in them: {', '.join(h for h, k in m.slow_hosts if k == m.slow_hosts[0][1])}" if slow else ""
    ax.set_title(f"{run}{m.bench}{' · ' + m.pattern if m.pattern else ''} · {slow} slow{hosts}", fontsize=10)


def link_heatmap(results: list[dict[str, Any]]) -> plt.Figure | None:
    """One panel per run, benchmark, pattern and case of the results that name a source and a
    destination host; None when no result does."""
    matrices = run_matrices(results)
    if not matrices:
        return None
    size = max(len(m.hosts) for m in matrices)
    fig, axes = plt.subplots(len(matrices), 1, figsize=(1.1 * size + 4, (0.8 * size + 2) * len(matrices)),
                             squeeze=False)
    for ax, m in zip(axes[:, 0], matrices, strict=True):
        _panel(ax, m)
    missing = [f"{c.src_host} → {c.dst_host}: {c.status}: {c.reason}" for m in matrices for c in m.cells
               if c.status != "ok"]
    if len(missing) > _REASONS_SHOWN:
        missing = missing[:_REASONS_SHOWN] + [f"… {len(missing) - _REASONS_SHOWN} more: kvbench fleet --pairs --run N"]
    fig.suptitle(QUESTION)
    # the reasons go under the panels, in a band of their own: about 0.15 in per line of 7 pt text
    bottom = (0.15 * len(missing) + 0.1) / fig.get_figheight() if missing else 0.0
    # and the question above them, in a band of its own (about 0.45 in): tight_layout leaves a suptitle out
    # of its sums, so at the full height the first panel's title ran into it
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.45 / fig.get_figheight()))
    if missing:
        fig.text(0.01, 0.01, "\n".join(missing), fontsize=7, va="bottom")
    return fig
