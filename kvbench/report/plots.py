"""Figures (seaborn), one per question, titled as the question they answer. Each returns a
matplotlib Figure, or None when the runs hold no data for it."""

from __future__ import annotations

import io
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from kvbench.analyze.paired import paired_ratio  # noqa: E402
from kvbench.benches.registry import all_benches  # noqa: E402
from kvbench.metadata import DIRECTIONS_GBPS, FRAGMENT_BYTES, PER_GPU_GBPS  # noqa: E402
from kvbench.kv.strategies import CEILINGS, is_ceiling  # noqa: E402
from kvbench.report.one_size import rate_by_run  # noqa: E402
from kvbench.units import format_size  # noqa: E402


def wrapped(text: str, width_in: float, fontsize: float = 10.0) -> str:
    """`text` broken at spaces into lines that fit `width_in` inches at `fontsize` points (an average glyph
    is about 0.6 em wide in DejaVu Sans): titles and axis labels that say their question whole instead of being cut."""
    per_line = max(int(width_in * 72 / (fontsize * 0.6)), 12)
    return "\n".join(textwrap.wrap(text, per_line)) or text


def results_frame(results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per ok result: bench, its params as columns, median/p10/p90 GB/s, peak."""
    rows = [{"bench": r["bench"], **r["params"], "gbps": r["gbps"]["median"], "p10": r["gbps"]["p10"],
             "p90": r["gbps"]["p90"], "peak_gbps": r["peak_gbps"], "run": r.get("run_id"),
             "buffer_bytes": (r.get("metadata") or {}).get("buffer_bytes")}
            for r in results if r["status"] == "ok"]
    return pd.DataFrame(rows)


def transfer_sizes(frame: pd.DataFrame) -> pd.Series:
    """Each row's size in bytes as the case really used it: `size=0` (hbm.*: "max(8 x L2, 1 GiB)")
    is the buffer its metadata records; NaN where neither is known (such rows are not plotted)."""
    size = pd.to_numeric(frame["size"], errors="coerce")
    if "buffer_bytes" in frame:
        size = size.where(size > 0, pd.to_numeric(frame["buffer_bytes"], errors="coerce"))
    return size.where(size > 0)


def _varying(frame: pd.DataFrame, exclude: set[str]) -> list[str]:
    skip = {"bench", "gbps", "p10", "p90", "peak_gbps", "run", "buffer_bytes", *exclude}
    return [c for c in frame.columns if c not in skip and frame[c].nunique(dropna=True) > 1]


def value_text(value: Any) -> str:
    # Columns holding NaN for other benchmarks turn ints into floats: show 2, not 2.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _size_params() -> set[str]:
    """Parameter names that hold sizes in any benchmark: shown as the tables write them (32KiB)."""
    return {name for spec in all_benches().values() for name, p in spec.params.items() if p.kind == "size"}


def _label(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    if not columns:
        return pd.Series(["all"] * len(frame), index=frame.index)
    sizes = _size_params()

    def text(c: str, v: Any) -> str:
        return format_size(int(v)) if c in sizes and isinstance(v, int | float) and v == v else value_text(v)

    return frame[columns].apply(lambda r: " ".join(f"{c}={text(c, r[c])}" for c in columns), axis=1)


def _runs_apart(frame: pd.DataFrame, series: pd.Series) -> pd.Series:
    """`series` prefixed with each row's run where the frame holds more than one run: two runs' points
    are two lines (run id in the legend), never one line averaged or zig-zagging between them."""
    if "run" not in frame or frame["run"].nunique(dropna=True) < 2:
        return series
    return "run " + frame["run"].map(value_text) + " " + series


PANELS_PER_ROW = 3  # small multiples: several runs side by side, each a panel of its own


def _panel_grid(n: int, panel_in: tuple[float, float]) -> tuple[plt.Figure, list[Any]]:
    """A figure of `n` panels, PANELS_PER_ROW to a row, sharing the y axis; the panels in reading order."""
    cols = min(n, PANELS_PER_ROW)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(panel_in[0] * cols + 1, panel_in[1] * rows + 0.6), squeeze=False,
                             sharey=True)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def bandwidth_vs_size(results: list[dict[str, Any]], bench: str) -> plt.Figure | None:
    """Rate against transfer size, the spec peak as a line and the 80-100 % band shaded. Several runs are
    small multiples (a panel per run, one colour per case across panels), never a dozen lines in one."""
    frame = results_frame(results)
    if frame.empty or bench not in set(frame["bench"]):
        return None
    frame = frame[frame["bench"] == bench].dropna(axis=1, how="all").copy()
    if "size" not in frame:
        return None
    frame["size"] = transfer_sizes(frame)
    frame = frame.dropna(subset=["size"])
    if frame.empty:
        return None
    frame["series"] = _label(frame, _varying(frame, {"size"}))
    if frame["size"].nunique() == 1 and "run" in frame and frame["run"].nunique() > 1:  # a point per run, one panel
        return rate_by_run(frame, bench, format_size(int(frame["size"].iloc[0])))
    runs = sorted(frame["run"].dropna().unique(), key=str) if "run" in frame and frame["run"].notna().any() else []
    panels = [(f"run {value_text(run)}", frame[frame["run"] == run]) for run in runs] if len(runs) > 1 else [("", frame)]
    fig, axes = _panel_grid(len(panels), (8, 4.5) if len(panels) == 1 else (4.2, 3.6))
    colours = dict(zip(sorted(frame["series"].unique()), sns.color_palette(n_colors=frame["series"].nunique()),
                       strict=True))
    peak = frame["peak_gbps"].dropna() if "peak_gbps" in frame else pd.Series(dtype=float)
    ticks = sorted(frame["size"].unique())
    for ax, (title, panel) in zip(axes, panels, strict=True):
        for series, line in panel.groupby("series"):
            line = line.sort_values("size")
            ax.plot(line["size"], line["gbps"], marker="o", color=colours[series],
                    label=series if len(colours) > 1 else "median; bar p10–p90")
            ax.vlines(line["size"], line["p10"], line["p90"], color=colours[series], alpha=0.4, lw=1)
        if not peak.empty:
            ax.axhline(peak.max(), color="black", ls="--", lw=1, label=f"spec peak {peak.max():.1f} GB/s")
            ax.axhspan(0.8 * peak.max(), peak.max(), color="green", alpha=0.08, label="80–100 % of peak")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [format_size(int(t)) for t in ticks], rotation=30 if len(ticks) > 4 else 0)
        ax.set_xlabel("transfer size")
        # from 0 (a dip is drawn at its size, not as a cliff) to above every panel's p90 and the peak: set_ylim
        # stops autoscaling, so a later panel's bar would otherwise run off the top of a shared axis
        ax.set_ylim(0, 1.08 * max(frame["p90"].max(), peak.max() if not peak.empty else 0.0))
        if title:
            ax.set_title(title, fontsize=10)
    axes[0].set_ylabel(wrapped("GB/s (1e9 B/s), median; bars p10–p90", 3.6 if len(panels) > 1 else 4.5))
    handles, labels = axes[0].get_legend_handles_labels()
    width = fig.get_figwidth()
    if len(panels) == 1:
        axes[0].legend(fontsize=7)
        axes[0].set_title(wrapped(f"How fast does {bench} move bytes, by transfer size?", width - 1, 12))
        fig.tight_layout()
    else:  # one legend for all panels, under them: the same colour is the same case in every run
        fig.suptitle(wrapped(f"How fast does {bench} move bytes, by transfer size?", width - 1, 12))
        fig.legend(handles, labels, loc="lower center", fontsize=7, ncol=min(len(labels), 3))
        legend_in = 0.2 * -(-len(labels) // 3) + 0.2  # about 0.2 in a row of 7-pt entries, and a margin
        fig.tight_layout(rect=(0, min(legend_in / fig.get_figheight(), 0.5), 1, 1))
    return fig


def kv_ratio_frame(results: list[dict[str, Any]]) -> pd.DataFrame:
    """Each fragmented kv.restore result as a fraction of one contiguous copy of the same bytes:
    the ratio the case measured itself, its strategy and the ceiling interleaved per pair of
    samples (median, p10, p90 over the pairs; `paired` True). A result that recorded none (older
    runs) falls back to its median over its contiguous twin's (same parameters but the strategy,
    same run), `paired` False. Empty when no result has either."""
    rows = [r for r in results if r["status"] == "ok" and r["bench"] == "kv.restore"]

    def key(r: dict[str, Any]) -> str:
        return repr((sorted((k, v) for k, v in r["params"].items() if k != "strategy"), r.get("run_id")))

    ceiling = {key(r): r["gbps"]["median"] for r in rows if is_ceiling(r["params"].get("strategy"))}
    out = []
    for r in rows:
        if is_ceiling(r["params"].get("strategy")):
            continue
        record = next((p for p in (paired_ratio(r, {"strategy": c}) for c in CEILINGS) if p), None)
        g, base = r["gbps"], ceiling.get(key(r))
        if record is not None:
            ratio, p10, p90 = record["median"], record["p10"], record["p90"]
        elif base:
            ratio, p10, p90 = g["median"] / base, (g.get("p10") or g["median"]) / base, (g.get("p90") or g["median"]) / base
        else:
            continue
        out.append({**r["params"], "fragment_bytes": (r.get("metadata") or {}).get(FRAGMENT_BYTES),
                    "ratio": ratio, "p10": p10, "p90": p90, "paired": record is not None, "run": r.get("run_id"),
                    "gbps": g["median"], "ceiling_gbps": (record or {}).get("against_gbps", {}).get("median") or base})
    return pd.DataFrame(out)


ABOVE_CEILING = 1.05  # a fragmented copy more than 5 % faster than one contiguous copy of its bytes: flagged


def kv_strategies(results: list[dict[str, Any]]) -> plt.Figure | None:
    """Each KV strategy's rate as a fraction of one contiguous copy of the same bytes, by fragment size
    (top row), and its absolute GB/s beside the contiguous copy's (bottom row): one column per model, one
    line per strategy (and other varying parameter), p10–p90 shaded. A point above the contiguous copy by
    more than ABOVE_CEILING is ringed red: the ceiling is one copy of the same bytes, so it is a question
    for the measurement, not a win."""
    frame = kv_ratio_frame(results)
    if frame.empty or frame["block_tokens"].nunique() < 2:
        return None
    models = sorted(frame["model"].unique())
    width = 5.0 * len(models) + 1.5
    fig, axes = plt.subplots(2, len(models), figsize=(width, 8.5), squeeze=False, sharex="col")
    flagged = 0
    for col, model in enumerate(models):
        top, bottom = axes[0][col], axes[1][col]
        panel = frame[frame["model"] == model].copy()
        panel["series"] = _runs_apart(panel, _label(panel, ["strategy", *_varying(
            panel, {"block_tokens", "strategy", "model", "fragment_bytes", "ratio", "paired", "gbps",
                    "ceiling_gbps"})]))
        panel.loc[~panel["paired"], "series"] += " (unpaired: two cases' medians)"
        by_fragment = panel["fragment_bytes"].notna().all()
        for series, line in panel.groupby("series"):
            line = line.sort_values("block_tokens")
            x = line["fragment_bytes"] if by_fragment else line["block_tokens"]
            drawn = top.plot(x, line["ratio"], marker="o", label=series)[0]
            top.fill_between(x, line["p10"], line["p90"], alpha=0.2)
            bottom.plot(x, line["gbps"], marker="o", color=drawn.get_color(), label=series)
            if line["ceiling_gbps"].notna().any():  # each series' own contiguous twin (same concurrency, run, ...)
                bottom.plot(x, line["ceiling_gbps"], color=drawn.get_color(), ls="--", marker="s", ms=4, alpha=0.7)
            above = line["ratio"] > ABOVE_CEILING
            if above.any():
                flagged += int(above.sum())
                top.scatter(x[above], line["ratio"][above], s=160, facecolors="none", edgecolors="red", lw=1.5,
                            zorder=5)
        top.axhline(1.0, color="black", ls="--", lw=1, label="one contiguous copy")
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.set_ylim(bottom=0)
        if by_fragment:
            ticks = sorted(panel["fragment_bytes"].unique())
            bottom.set_xticks(ticks, [format_size(int(t)) for t in ticks], rotation=30)
            bottom.set_xlabel("KV fragment (one layer's tensor for one block)")
        else:
            bottom.set_xlabel("tokens per KV block")
        top.set_title(model, fontsize=10)
        top.legend(fontsize=7)
    axes[0][0].set_ylabel(wrapped("rate ÷ one contiguous copy, per pair of samples (median; band p10–p90)", 3.4, 9),
                          fontsize=9)
    axes[1][0].set_ylabel(wrapped("GB/s (1e9 B/s), median; dashed: the same bytes as one contiguous copy", 3.4, 9),
                          fontsize=9)
    fig.suptitle(wrapped("How close does each KV strategy get to one contiguous copy, by fragment size?", width, 12))
    bottom_in = 0.0
    if flagged:  # under the panels, in red, where the eye goes after the rings
        note = (f"{flagged} point{'s' if flagged > 1 else ''} ringed red: faster than one contiguous copy of the same "
                f"bytes by more than {ABOVE_CEILING - 1:.0%}; the contiguous copy is the ceiling, so check the measurement")
        note = wrapped(note, width - 0.5, 9)
        bottom_in = 0.2 * (note.count("\n") + 1) + 0.15
        fig.text(0.01, 0.01, note, fontsize=9, color="red", va="bottom")
    fig.tight_layout(rect=(0, bottom_in / fig.get_figheight(), 1, 1))
    return fig


def png_bytes(fig: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def figure_bytes(fig: plt.Figure, fmt: str) -> bytes:
    """The figure as a `png` or `svg` file's bytes (closed after)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=150)
    plt.close(fig)
    return buffer.getvalue()


def numa_heatmap(results: list[dict[str, Any]]) -> plt.Figure | None:
    """pcie.h2d GB/s for every host NUMA node × GPU: the near/far matrix."""
    frame = results_frame(results)
    if frame.empty or "pcie.h2d" not in set(frame["bench"]):
        return None
    frame = frame[(frame["bench"] == "pcie.h2d") & frame["memory"].astype(str).str.startswith("numa:")].copy()
    if frame.empty or frame["memory"].nunique() < 2:
        return None
    frame["node"] = frame["memory"].str.slice(5).astype(int)
    runs = sorted(frame["run"].dropna().unique(), key=str) if frame["run"].notna().any() else [None]
    panels = [frame if run is None else frame[frame["run"] == run] for run in runs]  # one matrix per run
    matrices = [panel.pivot_table(index="node", columns="gpu", values="gbps", aggfunc="median") for panel in panels]
    width = max(m.shape[1] for m in matrices)
    fig, axes = plt.subplots(1, len(matrices), figsize=((1.2 * width + 3) * len(matrices),
                                                         0.8 * max(m.shape[0] for m in matrices) + 2), squeeze=False)
    for ax, matrix, run in zip(axes[0], matrices, runs, strict=True):
        sns.heatmap(matrix, annot=True, fmt=".1f", cmap="viridis", ax=ax, cbar_kws={"label": "GB/s (1e9 B/s)"})
        ax.set_xlabel("GPU")
        ax.set_ylabel("host memory on NUMA node")
        if len(runs) > 1:
            ax.set_title(f"run {value_text(run)}", fontsize=10)
    fig.suptitle("Which NUMA node feeds which GPU fastest (pcie.h2d)?")
    fig.tight_layout()
    return fig


def bidirectional(results: list[dict[str, Any]]) -> plt.Figure | None:
    """Each direction and their sum for pcie.bidir, next to one direction alone."""
    rows = []
    for r in results:
        if r["status"] != "ok":
            continue
        size, run = r["params"].get("size"), r.get("run_id")
        if r["bench"] == "pcie.bidir" and (r.get("metadata") or {}).get(DIRECTIONS_GBPS):
            d = r["metadata"][DIRECTIONS_GBPS]
            rows += [{"size": size, "what": "both: H2D", "gbps": d["h2d"], "run": run},
                     {"size": size, "what": "both: D2H", "gbps": d["d2h"], "run": run},
                     {"size": size, "what": "both: sum", "gbps": d["sum"], "run": run}]
            twin = paired_ratio(r, {"bench": "pcie.h2d"})
            if twin is not None:  # host-to-device alone, timed interleaved with both in the same case
                rows.append({"size": size, "what": "alone: H2D (paired, same case)",
                             "gbps": twin["against_gbps"]["median"], "run": run})
        elif r["bench"] in ("pcie.h2d", "pcie.d2h") and r["params"].get("memory") == "pinned":
            rows.append({"size": size, "what": f"alone: {r['bench'][5:].upper()}", "gbps": r["gbps"]["median"],
                         "run": run})
    if not any(row["what"].startswith("both") for row in rows):
        return None
    frame = pd.DataFrame(rows)
    frame["what"] = _runs_apart(frame, frame["what"])  # two runs' bars side by side, never averaged
    frame["size"] = frame["size"].map(lambda s: format_size(int(s)))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.barplot(frame, x="size", y="gbps", hue="what", ax=ax, errorbar=None)
    ax.set_ylabel("GB/s (1e9 B/s), median")
    ax.set_title("What do both directions at once give, per direction and summed?")
    fig.tight_layout()
    return fig


def all_gpus(results: list[dict[str, Any]]) -> plt.Figure | None:
    """Each GPU's rate while all copy at once, the aggregate, and the sum of the singles."""
    together = [r for r in results if r["status"] == "ok" and r["params"].get("gpus") == "all"
                and (r.get("metadata") or {}).get(PER_GPU_GBPS)]
    if not together:
        return None
    r = together[-1]
    per_gpu = r["metadata"][PER_GPU_GBPS]
    singles = {str(s["params"].get("gpu")): s["gbps"]["median"] for s in results  # alone in the same run
               if s["status"] == "ok" and s["bench"] == r["bench"] and s["params"].get("gpus", "one") == "one"
               and s["params"].get("memory") == "pinned" and s["params"].get("size") == r["params"].get("size")
               and s.get("run_id") == r.get("run_id")}
    rows = [{"gpu": g, "when": "all at once", "gbps": v} for g, v in per_gpu.items()]
    rows += [{"gpu": g, "when": "alone", "gbps": v} for g, v in singles.items()]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.barplot(pd.DataFrame(rows), x="gpu", y="gbps", hue="when", ax=ax, errorbar=None)
    ax.set_title(wrapped(f"Do all GPUs at once reach the sum of singles ({r['bench']}"
                         + (f", run {r['run_id']}" if r.get("run_id") is not None else "") + ": aggregate "
                         f"{r['gbps']['median']:.1f} GB/s, singles sum {sum(singles.values()):.1f})?", 7.5, 12))
    ax.set_ylabel("GB/s (1e9 B/s)")
    fig.tight_layout()
    return fig
