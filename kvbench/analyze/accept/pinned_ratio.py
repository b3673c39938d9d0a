"""Pageable host memory as a fraction of pinned, per PCIe case (the issue's "pageable reported as
a ratio of pinned"): what page-locking buys, size by size. A pageable copy-engine case times a
pinned twin interleaved with itself; its paired ratio (median over the pairs) is the ratio shown,
and only results without one fall back to dividing the two cases' medians (`paired` False)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from kvbench.analyze.paired import paired_ratio

BENCHES = ("pcie.h2d", "pcie.d2h")


@dataclass(frozen=True)
class PageableVsPinned:
    bench: str
    gpu: int
    size_bytes: int
    backend: str
    pinned_gbps: float
    pageable_gbps: float
    paired_ratio: float | None = None  # measured in the pageable case, per pair of samples

    @property
    def paired(self) -> bool:
        return self.paired_ratio is not None

    @property
    def ratio(self) -> float:
        """pageable GB/s / pinned GB/s: measured per pair of samples where the case did, else the medians'."""
        return self.paired_ratio if self.paired_ratio is not None else self.pageable_gbps / self.pinned_gbps


def pageable_vs_pinned(results: list[dict[str, Any]]) -> list[PageableVsPinned]:
    """One row per copy-engine case run both pinned and pageable (several runs count by median)."""
    rates: dict[tuple, dict[str, list[float]]] = {}
    for r in results:
        p = r["params"]
        if (r["bench"] not in BENCHES or r["status"] != "ok" or p.get("memory") not in ("pinned", "pageable")
                or p.get("engine", "ce") != "ce" or p.get("gpus", "one") != "one"):
            continue
        key = (r["bench"], int(p.get("gpu", 0)), int(p["size"]), p.get("backend", "cupy"))
        by = rates.setdefault(key, {})
        by.setdefault(p["memory"], []).append(r["gbps"]["median"])
        record = paired_ratio(r, {"memory": "pinned"}) if p["memory"] == "pageable" else None
        if record is not None:  # the pinned side it was paired with stands in for a pinned case
            by.setdefault("paired", []).append(record["median"])
            by.setdefault("pinned_twin", []).append(record["against_gbps"]["median"])
    return [PageableVsPinned(*key, median(by.get("pinned") or by["pinned_twin"]), median(by["pageable"]),
                             median(by["paired"]) if "paired" in by else None)
            for key, by in sorted(rates.items()) if ("pinned" in by or "paired" in by) and "pageable" in by]
