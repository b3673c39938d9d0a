"""Ratios measured in one case: a result's `paired` record (kvbench/metadata.py) read back for the
rules and figures that judge or show a ratio, so none of them divides two medians taken apart
when the case measured the ratio itself (DESIGN.md: "A ratio is measured, not divided")."""

from __future__ import annotations

from typing import Any

from kvbench.metadata import PAIRED


def paired_ratio(result: dict[str, Any], against: dict[str, Any]) -> dict[str, Any] | None:
    """The paired ratio `result` recorded against the side `against` names (canonical parameter
    values: every one must be what the pair's other side had), or None when it recorded none. Its
    `median`, `p10`, `p90` are this case's rate over the other side's, per pair of samples."""
    record = (result.get("metadata") or result.get("extra") or {}).get(PAIRED)
    if not record or not against:
        return None
    recorded = record.get("against") or {}
    return record if all(k in recorded and recorded[k] == v for k, v in against.items()) else None


def ratio_text(record: dict[str, Any]) -> str:
    """"0.93 x (paired; p10–p90 0.90–0.95)": the median ratio and its spread over the pairs."""
    return f"{record['median']:.2f} x (paired; p10–p90 {record['p10']:.2f}–{record['p90']:.2f})"
