"""Many servers, one database: the same case side by side across hosts, outliers flagged.

Hosts are grouped by SKU (their GPUs, else their CPU); within a group a host stands out when
it is at least `floor` (5 %) from the group median *and* more than `k` robust standard
deviations (1.4826 × MAD) away — the one server of a hundred whose GPU trained at x8.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class FleetRow:
    bench: str
    params: dict[str, Any]
    case: str
    host_id: str
    hostname: str
    sku: str
    gbps: float
    sku_median: float
    deviation: float  # gbps / sku_median - 1
    outlier: bool


def sku_of(facts: dict[str, Any]) -> str:
    gpus = facts.get("gpus") or []
    if gpus:
        names = sorted({g["name"] for g in gpus})
        return f"{len(gpus)}x {'+'.join(names)}"
    return f"{facts.get('sockets', 1)}x {facts.get('cpu_model', '?')}"


def latest_per_host_case(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        if row["status"] == "ok":
            latest[(row["host_id"], row["case_hash"])] = row
    return list(latest.values())


def fleet(rows: list[dict[str, Any]], hosts: dict[str, dict[str, Any]], k: float = 3.0,
          floor: float = 0.05) -> list[FleetRow]:
    """One row per (case, host) with the host's latest result, outliers flagged within each SKU."""
    # a result whose host has no row (written under an id merged away meanwhile) is shown by its id
    hosts = {**{r["host_id"]: {"hostname": f"{r['host_id'][:16]} (unknown host)", "facts": {}} for r in rows},
             **hosts}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in latest_per_host_case(rows):
        groups[(row["case_hash"], sku_of(hosts[row["host_id"]]["facts"]))].append(row)
    out = []
    for (case, sku), members in sorted(groups.items()):
        rates = np.array([m["gbps_median"] for m in members])
        median = float(np.median(rates))
        mad = float(np.median(np.abs(rates - median))) * 1.4826
        for m, rate in zip(members, rates, strict=True):
            deviation = rate / median - 1 if median else 0.0
            robust_far = mad == 0 or abs(rate - median) > k * mad
            outlier = len(members) >= 3 and abs(deviation) >= floor and robust_far
            out.append(FleetRow(m["bench"], m["params"], case, m["host_id"], hosts[m["host_id"]]["hostname"], sku,
                                float(rate), median, deviation, outlier))
    # Read as a person scans it: by benchmark, then case, then SKU, then host name.
    return sorted(out, key=lambda r: (r.bench, json.dumps(r.params, sort_keys=True, default=str), r.sku, r.hostname))
