"""The link matrix of a cluster run: source host × destination host, the median GB/s of each
directed pair, the slow links flagged by the fleet's one outlier rule (analyze/fleet.py), and the
hosts found most often in slow links.

A pair is read from its result: `src_host`/`dst_host` in the parameters, else the launcher's
`extra["cluster"]` record. A pair that failed or was skipped keeps its status and reason, and a
pair with no result is `missing` — never a rate of 0.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.spread import robust_spread
from kvbench.metadata import CLUSTER, PAIRED, REQUEST_MS

WIRE_CEILING = {"src_layout": "contiguous", "dst_layout": "contiguous"}  # a KV burst's paired side (benches/kv/burst.py)

# Parameters that name the pair or how it was reached, not what was measured: cells of one matrix
# differ in them and agree on everything else.
PAIR_KEYS = ("src_host", "dst_host", "src_rank", "dst_rank", "peer_addr", "peer_port", "peer_name", "round",
             "pattern", "concurrency")


@dataclass(frozen=True)
class LinkCell:
    src_host: str
    dst_host: str
    status: str  # ok | failed | skipped | missing (no result stored for this pair)
    gbps: float | None  # the median GB/s of an ok result; None otherwise
    reason: str | None
    deviation: float | None  # gbps / the matrix's median - 1 (a fraction); None unless ok
    slow: bool
    run_id: int | None
    result_id: int | None
    round: int | None
    concurrency: int | None  # pairs moving at once in the pair's round
    # a burst of KV requests (kv.restore requests=R): its fraction of the wire ceiling (the same bytes as one
    # descriptor, timed interleaved: the paired ratio) and its requests' p50 / p99 latency (ms)
    wire_fraction: float | None = None
    request_p50_ms: float | None = None
    request_p99_ms: float | None = None


@dataclass(frozen=True)
class LinkMatrix:
    bench: str
    pattern: str | None
    params: dict[str, Any]  # what every cell measured (the pair's own keys left out)
    run_id: int | str | None  # a run id, `cluster:<id>` (every rank's run of one launch), None: across runs
    hosts: tuple[str, ...]
    cells: tuple[LinkCell, ...]
    median_gbps: float | None  # of the ok cells
    spread_gbps: float | None  # their robust standard deviation (1.4826 × MAD)
    slow_hosts: tuple[tuple[str, int], ...]  # (host, slow links it is in), most first

    def cell(self, src: str, dst: str) -> LinkCell | None:
        return next((c for c in self.cells if c.src_host == src and c.dst_host == dst), None)


def unknown_host(rank: Any) -> str:
    """How a matrix names a host nobody knows: a rank that never joined its launch stored its pairs with
    its rank and no host (kvbench/cluster/rank.py)."""
    return f"rank {rank} (host unknown)"


def pair_of(row: dict[str, Any]) -> tuple[str, str] | None:
    """(source host, destination host) of a result, or None for a result that names no pair. A side
    whose host was never known (its rank never joined) is named by its rank: `rank 2 (host unknown)`."""
    cluster = (row.get("extra") or {}).get(CLUSTER) or {}
    params = row.get("params") or {}
    src, dst = params.get("src_host") or cluster.get("src_host"), params.get("dst_host") or cluster.get("dst_host")
    if cluster and (src or dst):  # a launcher's pair: a side with no host has its rank
        src = src or (unknown_host(cluster["src_rank"]) if cluster.get("src_rank") is not None else None)
        dst = dst or (unknown_host(cluster["dst_rank"]) if cluster.get("dst_rank") is not None else None)
    return (str(src), str(dst)) if src and dst else None


def _group(row: dict[str, Any]) -> tuple[str, str | None, str]:
    cluster = (row.get("extra") or {}).get(CLUSTER) or {}
    shape = {k: v for k, v in (row.get("params") or {}).items() if k not in PAIR_KEYS}
    pattern = cluster.get("pattern") or (row.get("params") or {}).get("pattern")
    return row["bench"], pattern, json.dumps(shape, sort_keys=True, default=str)


def _cell(src: str, dst: str, row: dict[str, Any] | None, missing: str) -> LinkCell:
    if row is None:
        return LinkCell(src, dst, "missing", None, missing, None, False, None, None, None, None)
    cluster = (row.get("extra") or {}).get(CLUSTER) or {}
    ok = row["status"] == "ok" and row.get("gbps_median") is not None
    reason = row.get("reason") or (None if ok else f"{row['status']} with no rate or reason stored")
    extra = row.get("extra") or {}
    paired = extra.get(PAIRED) or {}
    ceiling = paired.get("median") if ok and paired.get("against") == WIRE_CEILING else None
    requests = (extra.get(REQUEST_MS) or {}) if ok else {}
    return LinkCell(src, dst, row["status"] if row["status"] != "ok" or ok else "failed",
                    float(row["gbps_median"]) if ok else None, None if ok else reason, None, False,
                    row.get("run_id"), row.get("id"), cluster.get("round"), cluster.get("concurrency"),
                    ceiling, requests.get("p50"), requests.get("p99"))


def link_matrices(rows: list[dict[str, Any]], run_id: int | str | None = None, k: float = 3.0,
                  floor: float = 0.05) -> list[LinkMatrix]:
    """One matrix per benchmark, pattern and measured case among `rows` (store results with params,
    extra, status, reason, gbps_median, run_id, id): the newest result of each directed pair (the
    last of run `run_id`, or of any run when None); a slow link is an ok cell below the ok cells'
    median by the fleet's rule (`floor` fraction and `k` robust standard deviations). A pair two ranks
    of one launch both stored (an `ok` result by its initiator beside a `failed` stand-in by its
    target, whichever was stored last) is the `ok` one, as in the launch's run document."""
    groups: dict[tuple[str, str | None, str], dict[tuple[str, str], dict[str, Any]]] = {}
    measured = {key for row in rows if row["status"] == "ok" and (key := _launch_copy(row)) is not None}
    for row in rows:
        if row["status"] != "ok" and _launch_copy(row) in measured:
            continue
        pair = pair_of(row)
        if pair is None:
            continue
        cells = groups.setdefault(_group(row), {})
        if pair not in cells or (row["run_id"], row["id"]) > (cells[pair]["run_id"], cells[pair]["id"]):
            cells[pair] = row
    return [_matrix(key, by_pair, run_id, k, floor) for key, by_pair in sorted(groups.items(), key=_order)]


def _launch_copy(row: dict[str, Any]) -> tuple[Any, ...] | None:
    """(launch, case, round) of a launcher's result: the same for every rank's copy of one pair; None elsewhere."""
    cluster = (row.get("extra") or {}).get(CLUSTER) or {}
    return (cluster["id"], row.get("case_hash"), cluster.get("round")) if cluster.get("id") else None


def _order(item: tuple[tuple[str, str | None, str], Any]) -> tuple[str, str, str]:
    bench, pattern, shape = item[0]
    return bench, pattern or "", shape


def _matrix(key: tuple[str, str | None, str], by_pair: dict[tuple[str, str], dict[str, Any]], run_id: int | str | None,
            k: float, floor: float) -> LinkMatrix:
    bench, pattern, shape = key
    hosts = tuple(sorted({h for pair in by_pair for h in pair}))
    where = (f"run {run_id}" if isinstance(run_id, int) else f"cluster run {run_id}") if run_id is not None else "any run"
    guess = "" if pattern in (None, "pairs") else f" (pattern {pattern} may not pair these hosts)"
    cells = [_cell(s, d, by_pair.get((s, d)), f"no result stored for {s} → {d} in {where}{guess}")
             for s in hosts for d in hosts if s != d or (s, d) in by_pair]
    ok = [c for c in cells if c.status == "ok"]
    median = spread = None
    if ok:
        found = robust_spread([c.gbps for c in ok], k, floor)
        median, spread = found.median, found.sd
        judged = {(c.src_host, c.dst_host): (dev, far and dev < 0)
                  for c, dev, far in zip(ok, found.deviations, found.outliers, strict=True)}
        cells = [c if c.status != "ok" else
                 LinkCell(**{**c.__dict__, "deviation": judged[(c.src_host, c.dst_host)][0],
                             "slow": judged[(c.src_host, c.dst_host)][1]}) for c in cells]
    counts = Counter(h for c in cells if c.slow for h in {c.src_host, c.dst_host})
    slow_hosts = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return LinkMatrix(bench, pattern, json.loads(shape), run_id, hosts, tuple(cells), median, spread, slow_hosts)
