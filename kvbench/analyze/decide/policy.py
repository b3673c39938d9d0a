"""Which KV strategy to use at which fragment size, from this host's `kv.restore` sweep: for each
path (source kind → destination kind, or `peer GPU` for `kv.handoff`) the fastest strategy over each range of swept fragment
sizes, with its rate and its per-fragment cost α and streaming bandwidth β — the crossover a
serving engine otherwise finds by hand or calibrates at start-up.

Ranges join neighbouring swept sizes whose fastest strategy is the same; they span measured sizes
only (nothing is extrapolated). Where the runner-up's p10–p90 range reaches the winner's, the
two are within noise and the range says so. A policy never mixes models, layouts or hosts (each is
a policy of its own) and names the runs its figures came from; its α/β fit reads one run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.decide.fit import fit_alpha_beta
from kvbench.analyze.decide.peer_tier import TIER as PEER_PATH
from kvbench.analyze.decide.peer_tier import handoff_layout
from kvbench.analyze.decide.restore_plan import latest_per_case, layout_of, model_of
from kvbench.kv.strategies import is_ceiling
from kvbench.metadata import FRAGMENT_BYTES, FRAGMENTS

BENCHES = ("kv.restore", "kv.handoff")  # a handoff's strategies are a path of their own: peer GPU


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
    model: str = ""  # the model whose KV the sweep moved
    layout: str = ""  # source → destination pool layout
    host: str | None = None  # the host id, where the rows name one
    runs: tuple[Any, ...] = ()  # the runs the winners' rates and the fit came from


def path_of(params: dict[str, Any]) -> str:
    """`pinned → device` for a restore; `peer GPU` for a kv.handoff (GPU to GPU, no memory kinds)."""
    if "pair" in params:
        return PEER_PATH

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
    """Fastest strategy per fragment-size range for every path, model, layout and host in `rows`
    (stored kv.restore and kv.handoff rows)."""
    cells: dict[tuple, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in latest_per_case(rows):
        size = (r.get("extra") or {}).get(FRAGMENT_BYTES)
        if r["bench"] not in BENCHES or r["status"] != "ok" or size is None or is_ceiling(r["params"].get("strategy")):
            continue
        layout = handoff_layout(r["params"]) if r["bench"] == "kv.handoff" else layout_of(r["params"])
        key = (path_of(r["params"]), model_of(r["params"]), layout, r.get("host_id"))
        cells[key][int(size)].append(r)
    out = []
    for key, by_size in sorted(cells.items(), key=lambda kv: tuple(map(str, kv[0]))):
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
                current["rows"].append(winner)
                continue
            if current:
                out.append(_policy(key, current, fits))
            current = {"strategy": strategy, "lo": size, "hi": size, "gbps": winner["gbps_median"], "tie": tie,
                       "sizes": 1, "rows": [winner]}
        out.append(_policy(key, current, fits))
    return out


def _fit(rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    """α/β of one strategy from one run's rows (the run with the most usable points, the newest of
    equals): a fit never mixes runs. (fit or None, its run)."""
    usable = [r for r in rows if FRAGMENTS in (r.get("extra") or {}) and r.get("median_s")]
    by_run: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in usable:
        by_run[r.get("run_id")].append(r)
    if not by_run:
        return None, None
    run = max(by_run, key=lambda k: (len(by_run[k]), k if isinstance(k, int) else -1))
    chosen = by_run[run]
    return fit_alpha_beta((r["extra"][FRAGMENTS] for r in chosen), (r["bytes_per_op"] for r in chosen),
                          (r["median_s"] for r in chosen)), run


def _policy(key: tuple, current: dict[str, Any], fits: dict[str, Any]) -> Policy:
    path, model, layout, host = key
    fit, fit_run = fits.get(current["strategy"], (None, None))
    runs = {r.get("run_id") for r in current["rows"]} | ({fit_run} if fit else set())
    return Policy(path, (current["lo"], current["hi"]), current["strategy"], current["gbps"],
                  fit.alpha_us if fit else None, fit.beta_gbps if fit else None, current["tie"], current["sizes"],
                  model, layout, host, tuple(sorted((r for r in runs if r is not None), key=str)))
