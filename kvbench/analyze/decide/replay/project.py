"""A trace through one tier configuration: the cache, then each request's restores priced and
queued on the links, its misses recomputed, and the figures of result.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvbench.analyze.decide.replay.cache import CacheRun, simulate, unbounded_hits
from kvbench.analyze.decide.replay.links import LinkLoad, load, per_second, queue
from kvbench.analyze.decide.replay.policies import policy_id
from kvbench.analyze.decide.replay.pricing import TierPrice, block_bytes, fragments
from kvbench.analyze.decide.replay.result import ConfigAnswer, TierAnswer, TierSpec, percentiles, ratios
from kvbench.analyze.decide.recompute import ComputeRate
from kvbench.kv.geometry import ModelGeometry
from kvbench.kv.trace import Trace


@dataclass(frozen=True)
class Setting:
    """What every configuration of one replay shares."""

    model: ModelGeometry
    dtype: str
    tp: int
    engine_block_tokens: int
    rate: ComputeRate
    mfu: float


def prefill_flops(model: ModelGeometry, tokens: np.ndarray) -> np.ndarray:
    """`kvbench.analyze.decide.recompute.prefill_flops` over an array of token counts (as `plan` counts them)."""
    n = tokens.astype(np.float64)
    full = n * (n + 1) / 2
    w = model.sliding_window
    windowed = full if not w else np.where(n <= w, full, w * (w + 1) / 2 + (n - w) * w)
    pairs = (model.layers - model.sliding_layers) * full + model.sliding_layers * windowed
    qk, v = model.qk_head_dim or model.head_dim, model.v_head_dim or model.head_dim
    return 2.0 * model.active_params * n + 2.0 * model.q_heads * (qk + v) * pairs


def compute_seconds(setting: Setting, tokens: np.ndarray) -> np.ndarray:
    return prefill_flops(setting.model, tokens) / setting.tp / (setting.rate.tflops * 1e12 * setting.mfu)


def capacity_text(size_bytes: int | None) -> str:
    """`20GB`, `1TB`, `1.5TB`, `unbounded`: a capacity as a configuration's label shows it (decimal units)."""
    if size_bytes is None:
        return "unbounded"
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if size_bytes >= factor:
            return f"{size_bytes / factor:.4g}{unit}"
    return f"{size_bytes}B"


def capacity_blocks(tier: TierSpec, per_block: int) -> int | None:
    return None if tier.capacity_bytes is None else tier.capacity_bytes // per_block


def project(trace: Trace, tiers: list[TierSpec], prices: list[TierPrice], setting: Setting,
            label: str = "", cache: CacheRun | None = None) -> ConfigAnswer:
    """The replay of `trace` through `tiers`, each priced by `prices` (tier by tier)."""
    model, per_block = setting.model, block_bytes(setting.model, setting.dtype, setting.tp, trace.block_tokens)
    caps = [capacity_blocks(t, per_block) for t in tiers]
    run = cache or simulate(trace, caps, [policy_id(t.policy) for t in tiers])
    per_token = per_block / trace.block_tokens
    blocks, tokens = np.diff(trace.offsets), trace.input_tokens
    names: dict[str, int] = {}
    nlegs = max([len(p.restore) for p in prices] + [1])
    legs = np.full((len(tiers), nlegs), -1, np.int64)
    svc = np.zeros((trace.requests, len(tiers), nlegs))
    wlink = np.full(len(tiers), -1, np.int64)
    wsvc = np.zeros((trace.requests, len(tiers)))
    engine = setting.engine_block_tokens  # engines move whole engine blocks: a partial one moves whole
    restored = -(-run.hit_tokens // engine) * engine * per_token
    frags = fragments(model, run.hit_tokens, setting.engine_block_tokens)
    for t, price in enumerate(prices):
        for k, leg in enumerate(price.restore):
            legs[t, k] = names.setdefault(leg.link, len(names))
            svc[:, t, k] = np.where(run.hit_tokens[:, t] > 0, leg.seconds(restored[:, t], frags[:, t]), 0.0)
        if price.writeback and (t or tiers[0].name != "hbm"):
            wlink[t] = names.setdefault(price.writeback.link, len(names))
            written = run.written[:, t].astype(np.float64)
            wsvc[:, t] = price.writeback.seconds(written * per_block, fragments(
                model, written * trace.block_tokens, setting.engine_block_tokens))
    hit_tokens = run.hit_tokens.sum(axis=1)
    full = compute_seconds(setting, tokens)
    compute = full - compute_seconds(setting, hit_tokens)
    restore, ttft, backlog = queue(trace.arrival_s, svc, legs, compute, wsvc, wlink, len(names))
    _, unbounded_tokens = unbounded_hits(trace)
    infinite = full - compute_seconds(setting, unbounded_tokens)
    share = np.divide(run.hit_tokens, hit_tokens[:, None], out=np.zeros(run.hit_tokens.shape),
                      where=hit_tokens[:, None] > 0)
    recompute_hits = full - compute
    answers = [TierAnswer(
        t.name, t.policy, t.capacity_bytes, caps[i], float(run.hit_blocks[:, i].sum() / max(blocks.sum(), 1)),
        float(run.hit_tokens[:, i].sum() / max(tokens.sum(), 1)), float(restored[:, i].sum()),
        float(run.written[:, i].sum() * per_block), float(svc[:, i, :].sum()),
        float((share[:, i] * recompute_hits).sum()), prices[i]) for i, t in enumerate(tiers)]
    ub_blocks, ub_tokens = unbounded_hits(trace)
    return ConfigAnswer(
        label or " + ".join(f"{t.name}={capacity_text(t.capacity_bytes)}" for t in tiers), answers,
        **ratios(run.hit_blocks.sum(axis=1), hit_tokens, blocks, tokens),
        unbounded=ratios(ub_blocks, ub_tokens, blocks, tokens),
        ttft_s=percentiles(ttft), ttft_recompute_s=percentiles(full), ttft_infinite_s=percentiles(infinite),
        restore_s=percentiles(restore[restore > 0]),
        links=_loads(trace, prices, names, legs, svc, wlink, wsvc, restored, run, per_block, backlog),
        dropped_blocks=run.dropped, ttft=ttft)


def _loads(trace: Trace, prices: list[TierPrice], names: dict[str, int], legs: np.ndarray, svc: np.ndarray,
           wlink: np.ndarray, wsvc: np.ndarray, restored: np.ndarray, run: CacheRun, per_block: int,
           backlog: np.ndarray) -> list[LinkLoad]:
    span = int(np.floor(trace.arrival_s[-1])) + 1
    out = []
    for name, index in names.items():
        cells = [(t, k) for t in range(legs.shape[0]) for k in range(legs.shape[1]) if legs[t, k] == index]
        if cells:
            leg = prices[cells[0][0]].restore[cells[0][1]]
            busy = sum(svc[:, t, k] for t, k in cells)
            moved = sum(restored[:, t].sum() for t, _ in cells)
            out.append(load(name, "restore", leg.gbps, leg.kind, moved, per_second(trace.arrival_s, busy, span),
                            backlog[index]))
        tiers = [t for t in range(len(wlink)) if wlink[t] == index]
        if tiers:
            leg = prices[tiers[0]].writeback
            busy = sum(wsvc[:, t] for t in tiers)
            moved = sum(run.written[:, t].sum() * per_block for t in tiers)
            out.append(load(name, "write-back", leg.gbps, leg.kind, moved, per_second(trace.arrival_s, busy, span),
                            backlog[index]))
    return out
