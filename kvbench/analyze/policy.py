"""Which KV strategy to use at which fragment size, from this host's `kv.restore` sweep: for each
path (source kind → destination kind) the fastest strategy over each range of swept fragment
sizes, with its rate and its per-fragment cost α and streaming bandwidth β — the crossover a
serving engine otherwise finds by hand or calibrates at start-up.

Ranges join neighbouring swept sizes whose fastest strategy is the same; they span measured sizes
only (nothing is extrapolated). Where the runner-up's p10–p90 range reaches the winner's, the
two are within noise and the range says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.fit import fit_alpha_beta
from kvbench.analyze.restore_plan import latest_per_case
from kvbench.kv.strategies import is_ceiling
from kvbench.metadata import FRAGMENT_BYTES, FRAGMENTS


@dataclass(frozen=True)
class Policy:
    path: str  # e.g. "pinned → device"
    fragment_bytes: tuple[int, int]  # the swept sizes the range spans, inclusive
    strategy: str
    gbps: float  # the strategy's lowest median GB/s over the range: what it holds throughout
    alpha_us: float | None  # per-fragment cost of the strategy on this path (µs), None if not fittable
    beta_gbps: float | None
    tie_with: str | None  # a strategy within noise of it at every size of the range
    sizes: int  # swept sizes in the range


def path_of(params: dict[str, Any]) -> str:
    def kind(value: Any) -> str:
        return str(value).split(":")[0]

    return f"{kind(params.get('src'))} → {kind(params.get('dst'))}"


def _best_per_strategy(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        strategy = r["params"].get("strategy", "?")
        if strategy not in best or r["gbps_median"] > best[strategy]["gbps_median"]:
            best[strategy] = r
    return best


def _within_noise(winner: dict[str, Any], other: dict[str, Any]) -> bool:
    return (other.get("gbps_p90") or other["gbps_median"]) >= (winner.get("gbps_p10") or winner["gbps_median"])


def policies(rows: list[dict[str, Any]]) -> list[Policy]:
    """Fastest strategy per fragment-size range for every path in `rows` (stored kv.restore rows)."""
    cells: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in latest_per_case(rows):
        size = (r.get("extra") or {}).get(FRAGMENT_BYTES)
        if r["bench"] != "kv.restore" or r["status"] != "ok" or size is None or is_ceiling(r["params"].get("strategy")):
            continue
        cells[path_of(r["params"])][int(size)].append(r)
    out = []
    for path, by_size in sorted(cells.items()):
        fits = {strategy: _fit([r for rs in by_size.values() for r in rs if r["params"].get("strategy") == strategy])
                for strategy in {r["params"].get("strategy") for rs in by_size.values() for r in rs}}
        current: dict[str, Any] | None = None
        for size in sorted(by_size):
            ranked = sorted(_best_per_strategy(by_size[size]).values(), key=lambda r: -r["gbps_median"])
            winner = ranked[0]
            strategy = winner["params"].get("strategy", "?")
            tie = next((r["params"]["strategy"] for r in ranked[1:] if _within_noise(winner, r)), None)
            if current and current["strategy"] == strategy and current["tie"] == tie:  # a tie holds range-wide
                current.update(hi=size, gbps=min(current["gbps"], winner["gbps_median"]), sizes=current["sizes"] + 1)
                continue
            if current:
                out.append(_policy(path, current, fits))
            current = {"strategy": strategy, "lo": size, "hi": size, "gbps": winner["gbps_median"], "tie": tie,
                       "sizes": 1}
        out.append(_policy(path, current, fits))
    return out


def _fit(rows: list[dict[str, Any]]):
    usable = [r for r in rows if FRAGMENTS in (r.get("extra") or {}) and r.get("median_s")]
    return fit_alpha_beta((r["extra"][FRAGMENTS] for r in usable), (r["bytes_per_op"] for r in usable),
                          (r["median_s"] for r in usable))


def _policy(path: str, current: dict[str, Any], fits: dict[str, Any]) -> Policy:
    fit = fits.get(current["strategy"])
    return Policy(path, (current["lo"], current["hi"]), current["strategy"], current["gbps"],
                  fit.alpha_us if fit else None, fit.beta_gbps if fit else None, current["tie"], current["sizes"])
