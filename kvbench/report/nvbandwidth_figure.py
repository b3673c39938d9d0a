"""The report's figure of nvbandwidth's testcases: one heatmap per testcase, laid out as nvbandwidth's
matrices (CPU row × GPU columns for PCIe, GPU × GPU for peer copies), titled with the testcase's name, cells
blank (and written N/A) where not measured, never drawn as 0."""

from __future__ import annotations

import numpy as np
import seaborn as sns

from kvbench.analyze.links.nvbandwidth_shape import NvbandwidthCase
from kvbench.report.plots import plt, wrapped

QUESTION = "What would nvbandwidth show? kvbench's PCIe and GPU-to-GPU figures as its testcases"
PER_ROW = 2


def nvbandwidth_figure(cases: list[NvbandwidthCase]) -> plt.Figure | None:
    """One panel per testcase (two to a row); None without any."""
    if not cases:
        return None
    rows = -(-len(cases) // PER_ROW)
    heights = [max(c.rows for c in cases[i * PER_ROW:(i + 1) * PER_ROW]) for i in range(rows)]
    cols = min(len(cases), PER_ROW)
    width = 6.0 * cols
    fig, axes = plt.subplots(rows, cols, figsize=(width, sum(0.55 * h + 1.6 for h in heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": [0.55 * h + 1.6 for h in heights]})
    for ax in axes.flat[len(cases):]:
        ax.set_visible(False)
    for ax, case in zip(axes.flat, cases, strict=False):
        values = np.array([[np.nan if v is None else v for v in row] for row in case.matrix()], dtype=float)
        labels = np.where(np.isnan(values), "N/A", np.vectorize(lambda v: f"{v:.1f}")(np.nan_to_num(values)))
        sns.heatmap(values, annot=labels, fmt="", cmap="viridis", mask=np.isnan(values), ax=ax, cbar=True,
                    cbar_kws={"label": "GB/s"}, linewidths=0.5, linecolor="white",
                    xticklabels=list(range(case.columns)),
                    yticklabels=["CPU"] if case.rows == 1 and case.name.startswith(("host", "device_to_host")) else
                    list(range(case.rows)))
        for (r, c), text in np.ndenumerate(labels):
            if np.isnan(values[r, c]):
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=8, color="dimgray")
        ax.set_title(wrapped(f"{case.name} · SUM {case.total:.1f} GB/s", 5.0, 9), fontsize=9)
        ax.set_xlabel("GPU (column)", fontsize=8)
        ax.set_ylabel("" if case.rows == 1 else "GPU (row)", fontsize=8)
    fig.suptitle(wrapped(QUESTION, width - 0.5, 11), fontsize=11)
    fig.tight_layout()
    return fig
