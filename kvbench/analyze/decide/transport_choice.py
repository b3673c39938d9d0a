"""Which transport wins where, from `transport=both` cases: each measured Mooncake against NIXL on
the same pair, buffers and block size, timed interleaved (A B / B A), and stored the ratio
Mooncake / NIXL per pair of samples (metadata `paired`, against `transport=nixl`). No two cases'
medians are divided here: a case that did not measure the ratio itself is not shown.

A transport wins a size when the whole p10–p90 range of the ratio is on its side of 1; otherwise
the two are within noise of each other there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvbench.analyze.paired import paired_ratio
from kvbench.analyze.decide.restore_plan import latest_per_case
from kvbench.metadata import FRAGMENT_BYTES

BENCHES = ("net.write", "net.read", "kv.restore")
AGAINST = {"transport": "nixl"}


@dataclass(frozen=True)
class TransportChoice:
    bench: str
    size_bytes: int  # block size (net.*) or fragment size (kv.restore)
    between: str  # the pair: "src_host → dst_host" under a launcher, else the peer (inproc, local, an address)
    winner: str  # "mooncake", "nixl", or "within noise"
    ratio: float  # Mooncake / NIXL, median over the pairs of samples
    p10: float
    p90: float
    mooncake_gbps: float | None  # this case's median GB/s (Mooncake's)
    nixl_gbps: float | None  # the pair's median GB/s (NIXL's), as timed beside it
    pairs: int
    run: Any = None


def _between(params: dict[str, Any]) -> str:
    if params.get("src_host") and params.get("dst_host"):
        return f"{params['src_host']} → {params['dst_host']}"
    peer = params.get("peer", "?")
    return f"{peer} {params['peer_addr']}" if peer == "remote" and params.get("peer_addr") else str(peer)


def _size(row: dict[str, Any]) -> int | None:
    extra = row.get("extra") or row.get("metadata") or {}
    size = row["params"].get("block_size") if row["bench"].startswith("net.") else extra.get(FRAGMENT_BYTES)
    return int(size) if size is not None else None


def _own_gbps(row: dict[str, Any]) -> float | None:
    if row.get("gbps_median") is not None:
        return float(row["gbps_median"])
    gbps = row.get("gbps")
    return float(gbps["median"]) if isinstance(gbps, dict) and gbps.get("median") is not None else None


def transport_choices(rows: list[dict[str, Any]]) -> list[TransportChoice]:
    """One choice per transport=both case (the newest of each) in `rows` (stored results, or a run
    document's results), ordered by bench, pair and size."""
    keyed = [r if "case_hash" in r else {**r, "case_hash": id(r)} for r in rows]
    out = []
    for row in latest_per_case(keyed):
        if row["bench"] not in BENCHES or row["status"] != "ok" or row["params"].get("transport") != "both":
            continue
        record, size = paired_ratio(row, AGAINST), _size(row)
        if record is None or size is None:
            continue
        winner = "mooncake" if record["p10"] > 1 else "nixl" if record["p90"] < 1 else "within noise"
        nixl = (record.get("against_gbps") or {}).get("median")
        out.append(TransportChoice(row["bench"], size, _between(row["params"]), winner, record["median"],
                                   record["p10"], record["p90"], _own_gbps(row), nixl, int(record.get("pairs", 0)),
                                   row.get("run_id")))
    return sorted(out, key=lambda c: (c.bench, c.between, c.size_bytes))
