"""How long restoring a model's KV takes from each tier on this host: at the spec peak, and at
the bandwidth actually measured for that model's fragment size.

The measured figure is interpolated between the fragment sizes the sweep covered, never
extrapolated past them: outside the sweep the answer is "no measurement". Only the planned model's
results count (another model's request latency or rates are not this one's), each source and
destination layout and each host is a tier of its own, and every tier names the runs its numbers
came from.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from kvbench.analyze.decide.recompute import MFU, ComputeRate, break_even, prefill_flops, recompute_seconds
from kvbench.kv.geometry import ModelGeometry
from kvbench.kv.strategies import is_ceiling
from kvbench.metadata import FRAGMENT_BYTES, REQUEST_MS

HOST_KINDS = ("pageable", "numa", "pinned")
DEFAULT_MODEL = "Llama-3.1-70B"  # kv.restore's default: a row without the parameter measured it
LAYOUT_DEFAULTS = ("page_first", "layer_first")  # kv.restore's src_layout, dst_layout defaults


def model_of(params: dict[str, Any]) -> str:
    return str(params.get("model") or DEFAULT_MODEL)


def is_model(params: dict[str, Any], name: str) -> bool:
    """Whether a result measured the model `name` (a preset, or a config.json folder by its name)."""
    measured = model_of(params)
    path = Path(measured)
    return name in (measured, path.name, path.stem, path.parent.name if path.name == "config.json" else None)


def layout_of(params: dict[str, Any]) -> str:
    src, dst = params.get("src_layout") or LAYOUT_DEFAULTS[0], params.get("dst_layout") or LAYOUT_DEFAULTS[1]
    return f"{src} → {dst}"


def measured_models(rows: list[dict[str, Any]]) -> list[str]:
    """The models that ok kv.restore rows measured (for saying what a plan could have used)."""
    return sorted({model_of(r["params"]) for r in rows if r["bench"] == "kv.restore" and r["status"] == "ok"})


def tier_of(params: dict[str, Any]) -> str:
    """`DRAM → GPU`, `HBM → GPU`, `file → GPU`, `remote → GPU`, `DRAM → DRAM`, `file → DRAM (pinned staging)
    → GPU`, … from the memory kinds (and the staging of a two-hop restore)."""
    def name(kind: str) -> str:
        if kind.startswith(HOST_KINDS):
            return "DRAM"
        if kind.startswith("device"):
            return "HBM"
        return kind.split(":")[0]

    src, dst = name(str(params.get("src", ""))), name(str(params.get("dst", "")))
    via = params.get("via") or "none"
    hop = f" → DRAM ({via} staging)" if via != "none" else ""  # a two-hop restore is a tier of its own
    return f"{src}{hop} → {'GPU' if dst == 'HBM' else dst}"


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
    request_ms: dict[str, Any] | None = None  # one request's time (p50/p90/p99/max ms, n, tokens, run_id), as measured
    faster: str | None = None  # restore | recompute, where both sides are known
    break_even_tokens: int | None = None  # the fewest tokens from which restoring wins
    runs: tuple[Any, ...] = ()  # the runs the measured rate and the request time came from


@dataclass(frozen=True)
class PlanAnswer:
    """`plan`: restore or recompute, tier by tier."""

    model: str
    tokens: int
    kv_bytes: int
    recompute: dict[str, Any] | None  # seconds, flops, tflops, mfu, source; None when no rate is known
    recompute_note: str
    tiers: list[TierPlan]


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
    """One line per tier (and layout and host, where the rows hold several) that has kv.restore
    results of `model` among `rows`; none when no row measured that model."""
    kv_bytes = model.kv_bytes(tokens, dtype, tp)
    fragment = block_tokens * model.unit_bytes_per_token(dtype, tp)
    groups: dict[tuple[str, str, Any], list[dict[str, Any]]] = defaultdict(list)
    for row in latest_per_case(rows):
        if row["bench"] == "kv.restore" and row["status"] == "ok" and is_model(row["params"], model.name):
            groups[(tier_of(row["params"]), layout_of(row["params"]), row.get("host_id"))].append(row)
    layouts = defaultdict(set)
    for tier, layout, _ in groups:
        layouts[tier].add(layout)
    hosts = {host for _, _, host in groups}
    plans = []
    for (tier, layout, host), members in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        label = tier + (f" [{layout}]" if len(layouts[tier]) > 1 else "") + (
            f" on {str(host)[:12]}" if len(hosts) > 1 else "")
        plans.append(tier_plan(label, members, kv_bytes, fragment))
    return plans


def tier_plan(tier: str, members: list[dict[str, Any]], kv_bytes: int, fragment: int) -> TierPlan:
    peak = next((r["peak_gbps"] for r in members if r["peak_gbps"]), None)
    peak_note = next((r["peak_source"] for r in members if not r["peak_gbps"] and r["peak_source"]), None)
    best: dict[int, tuple[float, str]] = {}
    best_row: dict[int, dict[str, Any]] = {}
    for r in members:
        if is_ceiling(r["params"].get("strategy")):
            continue  # a one-copy ceiling is not a way to restore fragmented KV
        size = (r.get("extra") or {}).get(FRAGMENT_BYTES)
        if size is None:
            continue  # a result from before kvbench recorded it: no fragment size to place it at
        size = int(size)
        if size not in best or r["gbps_median"] > best[size][0]:
            best[size] = (r["gbps_median"], r["params"].get("strategy", "?"))
            best_row[size] = r
    measured = interpolate(best, fragment)
    notes = []
    if measured is None:
        covered = f"{min(best)}–{max(best)} B" if best else "none"
        notes.append(f"no measurement at {fragment} B fragments (sweep covered {covered})")
    if peak is None:
        notes.append(peak_note or "no spec peak")
    request = _request_at(best_row, fragment)
    used = [best_row[s] for s in _points_used(sorted(best), fragment)] if measured else []
    runs = tuple(sorted({r["run_id"] for r in used + ([best_row[request["fragment_bytes"]]] if request else [])
                         if r.get("run_id") is not None}, key=str))
    if runs:
        notes.append(f"run{'s' * (len(runs) > 1)} {', '.join(map(str, runs))}")
    return TierPlan(
        tier=tier, kv_bytes=kv_bytes, peak_gbps=peak, peak_s=kv_bytes / (peak * 1e9) if peak else None,
        measured_gbps=measured[0] if measured else None,
        measured_s=kv_bytes / (measured[0] * 1e9) if measured else None,
        strategy=measured[1] if measured else None, note="; ".join(notes), request_ms=request, runs=runs,
    )


def _points_used(sizes: list[int], fragment: int) -> list[int]:
    """The swept sizes an interpolation at `fragment` reads (the size itself, or its two neighbours)."""
    if fragment in sizes:
        return [fragment]
    hi = next((i for i, s in enumerate(sizes) if s > fragment), None)
    return sizes[hi - 1:hi + 1] if hi else []


def _request_at(rows_by_size: dict[int, dict[str, Any]], fragment: int) -> dict[str, Any] | None:
    """One request's measured time at the swept fragment size nearest `fragment` (its best strategy),
    with the tokens and fragment size it was measured at: a latency is never rescaled."""
    timed = {size: r for size, r in rows_by_size.items() if (r.get("extra") or {}).get(REQUEST_MS)}
    if not timed:
        return None
    size = min(timed, key=lambda s: abs(np.log(s) - np.log(fragment)))
    return {**timed[size]["extra"][REQUEST_MS], "tokens": timed[size]["params"].get("tokens"), "fragment_bytes": size,
            "run_id": timed[size].get("run_id")}


LEG = "a leg, not a restore option: it does not end in GPU memory, so it is not set against recomputing"


def ends_in_gpu(tier: str) -> bool:
    """Whether a tier (`DRAM → GPU`, `file → DRAM (pinned staging) → GPU`, `peer GPU [its layouts]`: a prefill
    GPU's KV into the decode GPU, `DRAM → DRAM`: no) ends in GPU memory."""
    name = tier.split(" [")[0].rstrip()
    return name.endswith("→ GPU") or name == "peer GPU"


def _request_explained(tier: TierPlan, tokens: int) -> TierPlan:
    """A request time longer than the whole restore says why (the request moved more tokens than the plan),
    or is left out with why (it was measured under contention, or its requests overlapped): never shown bare."""
    request, whole_ms = tier.request_ms, (tier.measured_s or 0) * 1e3
    if not request or not whole_ms or (request.get("p99") or 0) <= whole_ms:
        return tier
    if (request.get("tokens") or 0) > tokens:
        return replace(tier, note="; ".join(filter(None, [tier.note, (
            f"one request's p99 {request['p99']:.3g} ms is longer than this plan's whole restore "
            f"({whole_ms:.3g} ms): each measured request moved {request['tokens']} tokens, this plan {tokens}")])))
    return replace(tier, request_ms=None, note="; ".join(filter(None, [tier.note, (
        f"request time left out: its p99 {request['p99']:.3g} ms is longer than the whole restore "
        f"({whole_ms:.3g} ms), which one request cannot be; re-measure on a quiet box")])))


def decide(model: ModelGeometry, tokens: int, dtype: str, tp: int, tiers: list[TierPlan], rate: ComputeRate | None,
           mfu: float = MFU, active_params: float | None = None) -> PlanAnswer:
    """Each tier's restore time beside recomputing the same tokens: which is faster, and from how
    many tokens on restoring wins (at the tier's measured rate; none where it was not measured)."""
    kv_bytes = model.kv_bytes(tokens, dtype, tp)
    tiers = [_request_explained(t, tokens) if ends_in_gpu(t.tier)
             else replace(t, note="; ".join(filter(None, [t.note, LEG]))) for t in tiers]
    if rate is None:
        note = ("no compute rate: no gpu.matmul result on this host and no GPU with a datasheet figure "
                "(kvbench plan --tflops X or --gpu NAME gives one)")
        return PlanAnswer(model.name, tokens, kv_bytes, None, note, tiers)
    flops = prefill_flops(model, tokens, active_params)
    seconds = recompute_seconds(model, tokens, rate, mfu, tp, active_params)
    recompute = {"seconds": seconds, "flops": flops, "tflops": rate.tflops, "mfu": mfu, "tp": tp,
                 "source": rate.source, "kind": rate.kind}

    def recompute_s(n: int) -> float:
        return recompute_seconds(model, n, rate, mfu, tp, active_params)

    decided = []
    for tier in tiers:
        if not ends_in_gpu(tier.tier):  # DRAM → DRAM beside recomputing on the GPU compares nothing
            decided.append(tier)
            continue
        if not tier.measured_gbps:
            decided.append(tier)
            continue
        gbps = tier.measured_gbps

        def restore_s(n: int, gbps: float = gbps) -> float:
            return model.kv_bytes(n, dtype, tp) / (gbps * 1e9)

        faster = "restore" if tier.measured_s < seconds else "recompute"
        decided.append(replace(tier, faster=faster, break_even_tokens=break_even(restore_s, recompute_s)))
    return PlanAnswer(model.name, tokens, kv_bytes, recompute, "", decided)
