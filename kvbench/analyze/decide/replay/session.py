"""A whole `kvbench replay`: the tier specs as the user writes them, the configurations side by side,
a capacity sweep (the miss-ratio curve, its knee, the capacity that reaches 90 % of the unbounded hit
ratio), and the document `--json` writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kvbench.analyze.decide.replay.policies import DEFAULT, MIRRORS, policy_id
from kvbench.analyze.decide.replay.pricing import TIER_NAMES, block_bytes, tier_prices
from kvbench.analyze.decide.replay.project import Setting, project
from kvbench.analyze.decide.replay.result import ConfigAnswer, TierSpec, config_doc
from kvbench.errors import BadInput, unknown_name
from kvbench.kv.trace import Trace
from kvbench.units import parse_size

PUBLISHED = ("Mooncake FAST'25 Table 2 gives a 40 % cache hit ratio for this conversation trace (its own definition, "
             "on its own cluster's capacities)")
TTFT_MODEL = ("TTFT = queued restores (legs of one tier in series, tiers in parallel, each link first come first "
              "served) + the prefill of the misses after them (no overlap, no compute queue); write-backs start "
              "once a request is served, delay no TTFT, and queue on their own link")
UNBOUNDED = ("unbounded", "inf")


def parse_tier(text: str, policy: str = DEFAULT) -> TierSpec:
    """`dram=1TB`, `nvme=8TB:vllm`, `dram=unbounded`: a tier, its capacity and its eviction policy."""
    name, sep, rest = text.partition("=")
    if not sep:
        raise BadInput(f"bad --tier '{text}': write NAME=SIZE[:POLICY], e.g. dram=1TB or dram=1TB:vllm")
    name = name.strip()
    if name not in TIER_NAMES:
        raise unknown_name("tier", name, TIER_NAMES, list_all=True)
    size, _, own = rest.partition(":")
    policy_id(own or policy)
    capacity = None if size.strip().lower() in UNBOUNDED else parse_size(size, f"--tier {name}")
    return TierSpec(name, capacity, own or policy)


def parse_config(text: str, policy: str = DEFAULT) -> list[TierSpec]:
    """`hbm=20GB,dram=1TB`: one configuration, its tiers nearest the GPU first."""
    tiers = [parse_tier(part.strip(), policy) for part in text.split(",") if part.strip()]
    check_tiers(tiers, f"--config '{text}'")
    return tiers


def check_tiers(tiers: list[TierSpec], where: str) -> None:
    if not tiers:
        raise BadInput(f"{where}: no tier; give at least one, e.g. --tier hbm=20GB")
    names = [t.name for t in tiers]
    if len(set(names)) < len(names):
        raise BadInput(f"{where}: tier '{next(n for n in names if names.count(n) > 1)}' given twice")
    if "hbm" in names[1:]:
        raise BadInput(f"{where}: hbm is the tier nearest the GPU; give it first")


def parse_sweep(text: str) -> tuple[str, list[int]]:
    """`dram=64GB,128GB,256GB`: the tier whose capacity is swept, and the capacities."""
    name, sep, sizes = text.partition("=")
    if not sep or not sizes.strip():
        raise BadInput(f"bad --sweep '{text}': write TIER=SIZE,SIZE,…, e.g. dram=64GB,256GB,1TB")
    values = sorted({parse_size(s.strip(), f"--sweep {name}") for s in sizes.split(",") if s.strip()})
    return name.strip(), values


@dataclass(frozen=True)
class SweepAnswer:
    tier: str
    points: list[dict[str, Any]]  # capacity_bytes, capacity_blocks, the three ratios, ttft_s
    unbounded_hit_ratio: float
    knee_bytes: int | None
    reaches_90_bytes: int | None  # interpolated in log capacity; None when no swept capacity reaches it


def sweep(trace: Trace, base: list[TierSpec], tier: str, sizes: list[int], price: Callable[[list[TierSpec]], list],
          setting: Setting, progress: Callable[[int, int], None] | None = None) -> SweepAnswer:
    """The configuration `base` again at each capacity of `tier` (added last when `base` lacks it);
    `progress(i, size)` before the i-th (from 1) capacity is replayed."""
    if tier not in TIER_NAMES:
        raise unknown_name("tier", tier, TIER_NAMES, list_all=True)
    per_block = block_bytes(setting.model, setting.dtype, setting.tp, trace.block_tokens)
    points, unbounded = [], 0.0
    for i, size in enumerate(sizes, 1):
        if progress is not None:
            progress(i, size)
        tiers = [replace(t, capacity_bytes=size) if t.name == tier else t for t in base]
        if tier not in [t.name for t in tiers]:
            tiers.append(TierSpec(tier, size, base[-1].policy if base else DEFAULT))
        answer = project(trace, tiers, price(tiers), setting)
        unbounded = answer.unbounded["hit_ratio"]
        points.append({"capacity_bytes": size, "capacity_blocks": size // per_block, "hit_ratio": answer.hit_ratio,
                       "token_hit_ratio": answer.token_hit_ratio, "request_hit_ratio": answer.request_hit_ratio,
                       "ttft_s": {"p50": answer.ttft_s["p50"], "p99": answer.ttft_s["p99"]}})
    return SweepAnswer(tier, points, unbounded, knee(points), reaching(points, 0.9 * unbounded))


def knee(points: list[dict[str, Any]]) -> int | None:
    """Where more capacity stops paying: the first capacity past the steepest step of hit ratio against
    log capacity from which the next step gains less than half as much per doubling; None while every
    step after the steepest still gains at least half (the knee lies beyond the sweep)."""
    usable = [p for p in points if p["capacity_bytes"] > 0]
    if len(usable) < 3:
        return None
    x = np.log2([p["capacity_bytes"] for p in usable])
    y = np.array([p["hit_ratio"] for p in usable])
    slope = np.diff(y) / np.diff(x)
    steepest = int(np.argmax(slope))
    if slope[steepest] <= 0:
        return None
    for i in range(steepest + 1, len(slope)):
        if slope[i] < slope[steepest] / 2:
            return int(usable[i]["capacity_bytes"])
    return None


def reaching(points: list[dict[str, Any]], target: float) -> int | None:
    for lo, hi in zip(points, points[1:], strict=False):
        if lo["hit_ratio"] < target <= hi["hit_ratio"] and lo["capacity_bytes"] > 0:
            w = (target - lo["hit_ratio"]) / (hi["hit_ratio"] - lo["hit_ratio"])
            return int(np.exp(np.log(lo["capacity_bytes"]) + w * (np.log(hi["capacity_bytes"]) -
                                                                  np.log(lo["capacity_bytes"]))))
    return points[0]["capacity_bytes"] if points and points[0]["hit_ratio"] >= target else None


def pricer(rows: list[dict[str, Any]], setting: Setting, into: str) -> Callable[[list[TierSpec]], list]:
    return lambda tiers: tier_prices([t.name for t in tiers], rows, setting.model, into)


def document(trace: Trace, setting: Setting, configs: list[ConfigAnswer], swept: SweepAnswer | None,
             into: str, executed: dict[str, Any] | None = None) -> dict[str, Any]:
    """What `replay --json` writes (docs/json-outputs.md)."""
    per_block = block_bytes(setting.model, setting.dtype, setting.tp, trace.block_tokens)
    return {
        "trace": {"path": trace.path, "sha256": trace.digest, "requests": trace.requests,
                  "block_references": trace.references, "distinct_blocks": trace.distinct,
                  "trace_block_tokens": trace.block_tokens, "span_s": float(trace.arrival_s[-1])},
        "model": {"name": setting.model.name, "dtype": setting.dtype, "tp": setting.tp,
                  "engine_block_tokens": setting.engine_block_tokens, "hash_block_bytes": per_block},
        "compute": {"tflops": setting.rate.tflops, "mfu": setting.mfu, "kind": setting.rate.kind,
                    "source": setting.rate.source},
        "restore_into": into, "ttft_model": TTFT_MODEL, "policies": MIRRORS, "published": PUBLISHED,
        "configs": [config_doc(c) for c in configs],
        "sweep": None if swept is None else {
            "tier": swept.tier, "points": swept.points, "unbounded_hit_ratio": swept.unbounded_hit_ratio,
            "knee_bytes": swept.knee_bytes, "reaches_90pct_of_unbounded_bytes": swept.reaches_90_bytes},
        "executed": executed,
    }
