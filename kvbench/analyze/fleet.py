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

from kvbench.analyze.spread import robust_spread


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


def unknown_host_name(host_id: str) -> str:
    """How a result whose host has no row (written under an id merged away meanwhile) is shown."""
    return f"{host_id[:16]} (unknown host)"


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
    hosts = {**{r["host_id"]: {"hostname": unknown_host_name(r["host_id"]), "facts": {}} for r in rows},
             **hosts}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in latest_per_host_case(rows):
        groups[(row["case_hash"], sku_of(hosts[row["host_id"]]["facts"]))].append(row)
    out = []
    for (case, sku), members in sorted(groups.items()):
        spread = robust_spread([m["gbps_median"] for m in members], k, floor)
        for m, rate, deviation, outlier in zip(members, spread.rates, spread.deviations, spread.outliers, strict=True):
            out.append(FleetRow(m["bench"], m["params"], case, m["host_id"], hosts[m["host_id"]]["hostname"], sku,
                                rate, spread.median, deviation, outlier))
    return _as_scanned(out)


def _as_scanned(rows: list[FleetRow]) -> list[FleetRow]:
    """Read as a person scans it: by benchmark, then case, then SKU, then host name."""
    return sorted(rows, key=lambda r: (r.bench, json.dumps(r.params, sort_keys=True, default=str), r.sku, r.hostname))


def fleet_in_database(store: Any, benches: list[str] | None = None, k: float = 3.0, floor: float = 0.05,
                      outliers_only: bool = False) -> list[FleetRow]:
    """`fleet` answered from the database's newest ok rate of each host and case (store/fleet_spread.py:
    one row per host and case through the covering index, never every stored result), the same rule
    (`robust_spread`) applied per case and SKU here: the same rows as `fleet` over `store.latest_ok_results()`;
    with `outliers_only` only the outliers, whose benchmark and parameters alone are read back."""
    hosts = store.hosts()
    skus, unknown = {host_id: sku_of(h["facts"]) for host_id, h in hosts.items()}, sku_of({})
    groups: dict[tuple[str, str], list[tuple[int, str, str, float]]] = defaultdict(list)
    for row in store.newest_ok_rates(benches):
        groups[(row[2], skus.get(row[1], unknown))].append(row)
    kept = []
    for (case, sku), members in groups.items():
        spread = robust_spread([m[3] for m in members], k, floor)
        kept += [(m, sku, spread.median, deviation, outlier) for m, deviation, outlier
                 in zip(members, spread.deviations, spread.outliers, strict=True) if outlier or not outliers_only]
    named = store.cases_named({m[2]: m[0] for m, *_ in kept})
    return _as_scanned([FleetRow(named[m[2]][0], named[m[2]][1], m[2], m[1], hosts[m[1]]["hostname"] if m[1] in hosts
                                 else unknown_host_name(m[1]), sku, m[3], median, deviation, outlier)
                        for m, sku, median, deviation, outlier in kept])
