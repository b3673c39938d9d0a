"""The per-transfer cost model: time = fragments × α + bytes / β.

α (µs) is the fixed cost each fragment pays — the seed's "small transfers pay a start-up
cost" — and β (GB/s) the bandwidth the bytes stream at once that cost is paid. Both are fitted
by non-negative least squares over a sweep of block sizes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import nnls

from kvbench.metadata import FRAGMENTS

# The parameters that vary along a block-size sweep; everything else names the series.
SWEPT = ("block_tokens", "tokens", "seed", "pool_blocks")


POOR_R2 = 0.9  # below it a fit is flagged wherever it is shown (tables, report, JSON)


@dataclass(frozen=True)
class TransferFit:
    alpha_us: float  # seconds per fragment × 1e6
    beta_gbps: float | None  # None when the bytes term fitted to zero (cost all per-fragment)
    r2: float
    points: int

    @property
    def poor(self) -> bool:
        """R² below POOR_R2: the line explains too little of the times for α and β to be quoted as facts."""
        return self.r2 < POOR_R2


def fit_alpha_beta(fragments: Iterable[float], size_bytes: Iterable[float], seconds: Iterable[float]) -> TransferFit | None:
    """α and β from (fragments, bytes, seconds) per case.

    None with fewer than 3 distinct points, or when fragments and bytes grew in proportion
    (then no sweep can tell a per-fragment cost from a per-byte one).
    """
    f, b, t = (np.asarray(list(x), dtype=float) for x in (fragments, size_bytes, seconds))
    if len({(x, y) for x, y in zip(f, b, strict=True)}) < 3:
        return None
    # Scale the columns so both unknowns are of order one for the solver.
    fs, bs = f.max(), b.max()
    design = np.column_stack([f / fs, b / bs])
    if np.linalg.matrix_rank(design, tol=1e-9) < 2:
        return None
    coef, _ = nnls(design, t)
    alpha, inv_beta = coef[0] / fs, coef[1] / bs
    if inv_beta * b.max() <= 1e-9 * t.max():  # the solver's rounding, not a bytes term
        inv_beta = 0.0
    predicted = f * alpha + b * inv_beta
    total = ((t - t.mean()) ** 2).sum()
    r2 = 1.0 - ((t - predicted) ** 2).sum() / total if total > 0 else 1.0
    return TransferFit(alpha * 1e6, 1 / inv_beta / 1e9 if inv_beta > 0 else None, float(r2), len(t))


def series_key(row: dict[str, Any]) -> tuple:
    """The series a row belongs to: its benchmark, its parameters but the swept ones, and its run
    where the row names one (a fit never mixes runs: two runs' points are two series)."""
    run = (("run", row["run_id"]),) if row.get("run_id") is not None else ()
    return (row["bench"], tuple(sorted((k, v) for k, v in row["params"].items() if k not in SWEPT)) + run)


def fit_results(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], TransferFit | None]]:
    """One fit per series of ok KV results (kv.restore, kv.offload) that sweep block_tokens, and per
    run where the rows carry `run_id` (the series' parameters then hold `run`)."""
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        # Only block-size sweeps: fragment count and bytes must vary independently.
        if row["status"] == "ok" and "block_tokens" in row["params"] and FRAGMENTS in (row.get("extra") or {}):
            series[series_key(row)].append(row)
    out = []
    for (bench, params), members in series.items():
        fit = fit_alpha_beta((r["extra"][FRAGMENTS] for r in members), (r["bytes_per_op"] for r in members),
                             (r["median_s"] for r in members))
        out.append(({"bench": bench, **dict(params)}, fit))
    return out
