"""Figures (seaborn), one per question, titled as the question they answer. Each returns a
matplotlib Figure, or None when the runs hold no data for it."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from kvbench.metadata import DIRECTIONS_GBPS, PER_GPU_GBPS  # noqa: E402
from kvbench.units import format_size  # noqa: E402


def results_frame(results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per ok result: bench, its params as columns, median/p10/p90 GB/s, peak."""
    rows = [{"bench": r["bench"], **r["params"], "gbps": r["gbps"]["median"], "p10": r["gbps"]["p10"],
             "p90": r["gbps"]["p90"], "peak_gbps": r["peak_gbps"], "run": r.get("run_id")}
            for r in results if r["status"] == "ok"]
    return pd.DataFrame(rows)


def _varying(frame: pd.DataFrame, exclude: set[str]) -> list[str]:
    skip = {"bench", "gbps", "p10", "p90", "peak_gbps", "run", *exclude}
    return [c for c in frame.columns if c not in skip and frame[c].nunique(dropna=True) > 1]


def _text(value: Any) -> str:
    # Columns holding NaN for other benchmarks turn ints into floats: show 2, not 2.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _label(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    if not columns:
        return pd.Series(["all"] * len(frame), index=frame.index)
    return frame[columns].apply(lambda r: " ".join(f"{c}={_text(r[c])}" for c in columns), axis=1)


def bandwidth_vs_size(results: list[dict[str, Any]], bench: str) -> plt.Figure | None:
    """Rate against transfer size, the spec peak as a line and the 80-100 % band shaded."""
    frame = results_frame(results)
    if frame.empty or bench not in set(frame["bench"]):
        return None
    frame = frame[frame["bench"] == bench].dropna(axis=1, how="all").copy()
    if "size" not in frame:
        return None
    frame["series"] = _label(frame, _varying(frame, {"size"}))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.lineplot(frame, x="size", y="gbps", hue="series", marker="o", ax=ax, errorbar=None)
    for _, row in frame.iterrows():
        ax.plot([row["size"], row["size"]], [row["p10"], row["p90"]], color="grey", alpha=0.4, lw=1)
    peak = frame["peak_gbps"].dropna() if "peak_gbps" in frame else pd.Series(dtype=float)
    if not peak.empty:
        ax.axhline(peak.max(), color="black", ls="--", lw=1, label=f"spec peak {peak.max():.1f} GB/s")
        ax.axhspan(0.8 * peak.max(), peak.max(), color="green", alpha=0.08, label="80–100 % of peak")
    ax.set_xscale("log", base=2)
    ticks = sorted(frame["size"].unique())
    ax.set_xticks(ticks, [format_size(int(t)) for t in ticks])
    ax.set_xlabel("transfer size")
    ax.set_ylabel("GB/s (1e9 B/s), median; bars p10–p90")
    ax.set_title(f"How fast does {bench} move bytes, by transfer size?")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def kv_strategies(results: list[dict[str, Any]]) -> plt.Figure | None:
    """KV restore rate per strategy against block size, the contiguous ceiling dashed."""
    frame = results_frame(results)
    if frame.empty or "kv.restore" not in set(frame["bench"]):
        return None
    frame = frame[frame["bench"] == "kv.restore"].dropna(axis=1, how="all").copy()
    if frame["block_tokens"].nunique() < 2:
        return None
    frame["series"] = _label(frame, _varying(frame, {"block_tokens", "strategy"}))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    strategies = sorted(frame["strategy"].unique(), key=lambda s: (s == "contiguous", s))
    sns.lineplot(frame, x="block_tokens", y="gbps", hue="series", style="strategy", style_order=strategies,
                 dashes=[(4, 2) if s == "contiguous" else "" for s in strategies], marker="o", ax=ax, errorbar=None)
    ax.set_xscale("log", base=2)
    ticks = sorted(frame["block_tokens"].unique())
    ax.set_xticks(ticks, [str(int(t)) for t in ticks])
    ax.set_xlabel("tokens per KV block (fragment size grows with it)")
    ax.set_ylabel("GB/s (1e9 B/s), median")
    ax.set_title("How close does each KV strategy get to one contiguous copy, by block size?")
    ax.legend(fontsize=7)
    fig.tight_layout()
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
    matrix = frame.pivot_table(index="node", columns="gpu", values="gbps", aggfunc="median")
    fig, ax = plt.subplots(figsize=(1.2 * matrix.shape[1] + 3, 0.8 * matrix.shape[0] + 2))
    sns.heatmap(matrix, annot=True, fmt=".1f", cmap="viridis", ax=ax, cbar_kws={"label": "GB/s (1e9 B/s)"})
    ax.set_xlabel("GPU")
    ax.set_ylabel("host memory on NUMA node")
    ax.set_title("Which NUMA node feeds which GPU fastest (pcie.h2d)?")
    fig.tight_layout()
    return fig


def bidirectional(results: list[dict[str, Any]]) -> plt.Figure | None:
    """Each direction and their sum for pcie.bidir, next to one direction alone."""
    rows = []
    for r in results:
        if r["status"] != "ok":
            continue
        size = r["params"].get("size")
        if r["bench"] == "pcie.bidir" and (r.get("metadata") or {}).get(DIRECTIONS_GBPS):
            d = r["metadata"][DIRECTIONS_GBPS]
            rows += [{"size": size, "what": "both: H2D", "gbps": d["h2d"]}, {"size": size, "what": "both: D2H", "gbps": d["d2h"]},
                     {"size": size, "what": "both: sum", "gbps": d["sum"]}]
        elif r["bench"] in ("pcie.h2d", "pcie.d2h") and r["params"].get("memory") == "pinned":
            rows.append({"size": size, "what": f"alone: {r['bench'][5:].upper()}", "gbps": r["gbps"]["median"]})
    if not any(row["what"].startswith("both") for row in rows):
        return None
    frame = pd.DataFrame(rows)
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
    singles = {str(s["params"].get("gpu")): s["gbps"]["median"] for s in results
               if s["status"] == "ok" and s["bench"] == r["bench"] and s["params"].get("gpus", "one") == "one"
               and s["params"].get("memory") == "pinned" and s["params"].get("size") == r["params"].get("size")}
    rows = [{"gpu": g, "when": "all at once", "gbps": v} for g, v in per_gpu.items()]
    rows += [{"gpu": g, "when": "alone", "gbps": v} for g, v in singles.items()]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.barplot(pd.DataFrame(rows), x="gpu", y="gbps", hue="when", ax=ax, errorbar=None)
    ax.set_title(f"Do all GPUs at once reach the sum of singles ({r['bench']}: aggregate "
                 f"{r['gbps']['median']:.1f} GB/s, singles sum {sum(singles.values()):.1f})?")
    ax.set_ylabel("GB/s (1e9 B/s)")
    fig.tight_layout()
    return fig
