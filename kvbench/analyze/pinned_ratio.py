"""Pageable host memory as a fraction of pinned, per PCIe case (the issue's "pageable reported as
a ratio of pinned"): what page-locking buys, size by size."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

BENCHES = ("pcie.h2d", "pcie.d2h")


@dataclass(frozen=True)
class PageableVsPinned:
    bench: str
    gpu: int
    size_bytes: int
    backend: str
    pinned_gbps: float
    pageable_gbps: float

    @property
    def ratio(self) -> float:
        """pageable GB/s / pinned GB/s."""
        return self.pageable_gbps / self.pinned_gbps


def pageable_vs_pinned(results: list[dict[str, Any]]) -> list[PageableVsPinned]:
    """One row per copy-engine case run both pinned and pageable (several runs count by median)."""
    rates: dict[tuple, dict[str, list[float]]] = {}
    for r in results:
        p = r["params"]
        if (r["bench"] not in BENCHES or r["status"] != "ok" or p.get("memory") not in ("pinned", "pageable")
                or p.get("engine", "ce") != "ce" or p.get("gpus", "one") != "one"):
            continue
        key = (r["bench"], int(p.get("gpu", 0)), int(p["size"]), p.get("backend", "cupy"))
        rates.setdefault(key, {}).setdefault(p["memory"], []).append(r["gbps"]["median"])
    return [PageableVsPinned(*key, median(by["pinned"]), median(by["pageable"]))
            for key, by in sorted(rates.items()) if "pinned" in by and "pageable" in by]
