"""The link matrix of each cluster run as a heatmap: "Which links are slow?". Cells are the median GB/s of
each directed pair (analyze/links/link_matrix.py); slow links are outlined and marked, a pair without a rate
is left blank and named (failed, skipped, missing) — never coloured as 0. Every matrix is drawn on one colour
scale; two launches (or more) add the change matrix from each to the next: new ÷ base per link, each cell
with the verdict `compare cluster:A cluster:B` gives it (analyze/links/link_compare.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import seaborn as sns
from matplotlib.patches import Rectangle

from kvbench.analyze.links.link_compare import compare_links, link_key
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


def _panel(ax, m: LinkMatrix, scale: tuple[float, float]) -> None:
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
                cbar_kws={"label": "GB/s (1e9 B/s)"}, mask=np.isnan(rates), linewidths=0.5, linecolor="white",
                vmin=scale[0], vmax=scale[1])  # one scale for every matrix: a colour is one rate in all of them
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


Change = tuple[str, tuple[str, ...], dict[tuple[str, str], tuple[float | None, str]]]


def run_changes(results: list[dict[str, Any]]) -> list[Change]:
    """(title, hosts, {(source, destination): (new ÷ base or None, verdict)}) from each run holding links to
    the next, one per benchmark and shape: the comparison `compare` makes of two cluster runs, link by link."""
    runs: dict[Any, list[dict[str, Any]]] = {}
    for r in results:
        runs.setdefault(r.get("run_id"), []).append(r)
    order = sorted((run for run in runs if run is not None), key=str)
    out: list[Change] = []
    name = lambda run: run if isinstance(run, str) else f"run {run}"  # noqa: E731
    for base, new in zip(order, order[1:]):
        keys = {r["case"]: link_key(r) for r in runs[base] + runs[new] if link_key(r)}
        groups: dict[tuple[str, str, str], dict[tuple[str, str], tuple[float | None, str]]] = {}
        for c in compare_links({"run": {"id": base}, "results": runs[base]}, {"run": {"id": new}, "results": runs[new]}):
            ratio = c.new_gbps / c.base_gbps if c.new_gbps and c.base_gbps else None
            bench, pattern, shape = keys[c.case][:3] if c.case in keys else (c.bench, "", "")
            groups.setdefault((bench, pattern, shape), {})[(c.params["src_host"], c.params["dst_host"])] = (ratio, c.verdict)
        shapes = Counter((bench, pattern) for bench, pattern, _ in groups)
        for k, ((bench, pattern, shape), cells) in enumerate(sorted(groups.items())):
            hosts = tuple(sorted({h for pair in cells for h in pair}))
            what = f"{bench}{' · ' + pattern if pattern else ''}" + (f" · shape {k + 1}" if shapes[bench, pattern] > 1 else "")
            out.append((f"{name(base)} → {name(new)} · {what}: new ÷ base per link", hosts, cells))
    return out


def _change_panel(ax, change: Change) -> None:
    title, hosts, cells = change
    n = len(hosts)
    ratios, labels = np.full((n, n), np.nan), np.full((n, n), "", dtype=object)
    for (src, dst), (ratio, verdict) in cells.items():
        i, j = hosts.index(src), hosts.index(dst)
        if ratio is not None:
            ratios[i, j] = ratio
        labels[i, j] = (f"{ratio:.2f}×" if ratio is not None else "") + (f"\n{verdict}" if verdict != "same" else "")
    sns.heatmap(ratios, annot=labels, fmt="", cmap="RdBu", center=1.0, vmin=0.5, vmax=1.5, ax=ax, xticklabels=hosts,
                yticklabels=hosts, mask=np.isnan(ratios), linewidths=0.5, linecolor="white",
                cbar_kws={"label": "new ÷ base (cut at 0.5 and 1.5)"})
    for (i, j), text in np.ndenumerate(labels):
        if np.isnan(ratios[i, j]) and text:
            ax.text(j + 0.5, i + 0.5, text.strip(), ha="center", va="center", fontsize=9, color="dimgray")
    ax.set_xlabel("destination host")
    ax.set_ylabel("source host")
    ax.set_title(title, fontsize=10)


def link_heatmap(results: list[dict[str, Any]]) -> plt.Figure | None:
    """One panel per run, benchmark, pattern and case of the results that name a source and a
    destination host, on one colour scale, then a change panel from each run to the next; None when no
    result names a pair."""
    matrices = run_matrices(results)
    if not matrices:
        return None
    changes = run_changes(results) if len({m.run_id for m in matrices}) > 1 else []
    size = max(len(m.hosts) for m in matrices)
    panels = len(matrices) + len(changes)
    fig, axes = plt.subplots(panels, 1, figsize=(1.1 * size + 4, (0.8 * size + 2) * panels), squeeze=False)
    rates = [c.gbps for m in matrices for c in m.cells if c.status == "ok" and c.gbps is not None]
    scale = (min(rates), max(rates)) if rates else (0.0, 1.0)
    for ax, m in zip(axes[: len(matrices), 0], matrices, strict=True):
        _panel(ax, m, scale)
    for ax, change in zip(axes[len(matrices):, 0], changes, strict=True):
        _change_panel(ax, change)
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
