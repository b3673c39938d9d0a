"""How long restoring a model's KV takes from each tier on this host: at the spec peak, and at
the bandwidth actually measured for that model's fragment size.

The measured figure is interpolated between the fragment sizes the sweep covered, never
extrapolated past them: outside the sweep the answer is "no measurement".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvbench.kv.geometry import ModelGeometry
from kvbench.kv.strategies import is_ceiling
from kvbench.metadata import FRAGMENT_BYTES

HOST_KINDS = ("pageable", "numa", "pinned")


def tier_of(params: dict[str, Any]) -> str:
    """`DRAM → GPU`, `HBM → GPU`, `file → GPU`, `remote → GPU`, `DRAM → DRAM`, … from the memory kinds."""
    def name(kind: str) -> str:
        if kind.startswith(HOST_KINDS):
            return "DRAM"
        if kind.startswith("device"):
            return "HBM"
        return kind.split(":")[0]

    src, dst = name(str(params.get("src", ""))), name(str(params.get("dst", "")))
    return f"{src} → {'GPU' if dst == 'HBM' else dst}"


@dataclass(frozen=True)
class TierPlan:
    tier: str
    kv_bytes: int
    peak_gbps: float | None
    peak_s: float | None
    measured_gbps: float | None
    measured_s: float | None
    strategy: str | None
    note: str


def latest_per_case(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest result of each case (rows come oldest first)."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        latest[row["case_hash"]] = row
    return list(latest.values())


def interpolate(points: dict[int, tuple[float, str]], fragment_bytes: int) -> tuple[float, str] | None:
    """(GB/s, strategy) at `fragment_bytes`, linear in log(fragment size); None outside the sweep."""
    sizes = sorted(points)
    if not sizes or fragment_bytes < sizes[0] or fragment_bytes > sizes[-1]:
        return None
    if fragment_bytes in points:
        return points[fragment_bytes]
    hi = next(i for i, s in enumerate(sizes) if s > fragment_bytes)
    lo_size, hi_size = sizes[hi - 1], sizes[hi]
    w = (np.log(fragment_bytes) - np.log(lo_size)) / (np.log(hi_size) - np.log(lo_size))
    gbps = (1 - w) * points[lo_size][0] + w * points[hi_size][0]
    return float(gbps), f"{points[lo_size][1]}/{points[hi_size][1]} (interpolated)"


def restore_plan(model: ModelGeometry, tokens: int, dtype: str, tp: int, block_tokens: int,
                 rows: list[dict[str, Any]]) -> list[TierPlan]:
    """One line per tier that has kv.restore results among `rows`."""
    kv_bytes = tokens * model.bytes_per_token(dtype, tp)
    fragment = block_tokens * model.unit_bytes_per_token(dtype, tp)
    by_tier: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in latest_per_case(rows):
        if row["bench"] == "kv.restore" and row["status"] == "ok":
            by_tier[tier_of(row["params"])].append(row)
    plans = []
    for tier, members in sorted(by_tier.items()):
        peak = next((r["peak_gbps"] for r in members if r["peak_gbps"]), None)
        peak_note = next((r["peak_source"] for r in members if not r["peak_gbps"] and r["peak_source"]), None)
        best: dict[int, tuple[float, str]] = {}
        for r in members:
            if is_ceiling(r["params"].get("strategy")):
                continue  # a one-copy ceiling is not a way to restore fragmented KV
            size = (r.get("extra") or {}).get(FRAGMENT_BYTES)
            if size is None:
                continue  # a result from before kvbench recorded it: no fragment size to place it at
            size = int(size)
            if size not in best or r["gbps_median"] > best[size][0]:
                best[size] = (r["gbps_median"], r["params"].get("strategy", "?"))
        measured = interpolate(best, fragment)
        notes = []
        if measured is None:
            covered = f"{min(best)}–{max(best)} B" if best else "none"
            notes.append(f"no measurement at {fragment} B fragments (sweep covered {covered})")
        if peak is None:
            notes.append(peak_note or "no spec peak")
        plans.append(TierPlan(
            tier=tier, kv_bytes=kv_bytes, peak_gbps=peak, peak_s=kv_bytes / (peak * 1e9) if peak else None,
            measured_gbps=measured[0] if measured else None,
            measured_s=kv_bytes / (measured[0] * 1e9) if measured else None,
            strategy=measured[1] if measured else None, note="; ".join(notes),
        ))
    return plans
