"""One replayed configuration: its tiers, the definitions every figure uses, and the answer.

- **hit ratio** (block-weighted): hash blocks served from some tier ÷ hash blocks requested, over all
  requests; per tier, the blocks that tier served ÷ blocks requested.
- **token hit ratio**: tokens served ÷ input tokens; a hit on a request's last, partial block counts
  its `input_length − block·(n−1)` tokens.
- **request hit ratio**: the mean over requests of each one's blocks served ÷ its blocks (AIPerf's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kvbench.analyze.decide.replay.links import LinkLoad
from kvbench.analyze.decide.replay.pricing import TierPrice


@dataclass(frozen=True)
class TierSpec:
    name: str  # hbm | dram | nvme | remote
    capacity_bytes: int | None  # None: unbounded
    policy: str


@dataclass(frozen=True)
class TierAnswer:
    name: str
    policy: str
    capacity_bytes: int | None
    capacity_blocks: int | None
    hit_ratio: float
    token_hit_ratio: float
    bytes_restored: float
    bytes_written: float  # write-backs into this tier (the first tier: new blocks offloaded into it)
    restore_s: float  # every request's restore from it, summed, unqueued
    recompute_s: float  # recomputing the same tokens instead, summed
    price: TierPrice

    @property
    def pays(self) -> bool:
        """Whether restoring from this tier beats recomputing what it served (a tier that served nothing: no)."""
        return self.restore_s < self.recompute_s if self.bytes_restored else False


@dataclass(frozen=True)
class ConfigAnswer:
    label: str
    tiers: list[TierAnswer]
    hit_ratio: float
    token_hit_ratio: float
    request_hit_ratio: float
    unbounded: dict[str, float]  # the same three ratios for a cache that never evicts
    ttft_s: dict[str, float]
    ttft_recompute_s: dict[str, float]
    ttft_infinite_s: dict[str, float]
    restore_s: dict[str, float]  # per request, queued, over the requests with a restore
    links: list[LinkLoad]
    dropped_blocks: int
    ttft: np.ndarray = field(repr=False, compare=False)  # per request, for the CDF


def percentiles(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99)),
            "max": float(values.max())}


def ratios(hit_blocks: np.ndarray, hit_tokens: np.ndarray, blocks: np.ndarray, tokens: np.ndarray
           ) -> dict[str, float]:
    """The three hit ratios of per-request hits (summed over tiers) against what was requested."""
    per_request = np.divide(hit_blocks, blocks, out=np.zeros(len(blocks)), where=blocks > 0)
    return {"hit_ratio": float(hit_blocks.sum() / max(blocks.sum(), 1)),
            "token_hit_ratio": float(hit_tokens.sum() / max(tokens.sum(), 1)),
            "request_hit_ratio": float(per_request.mean())}


def _leg_doc(leg: Any) -> dict[str, Any]:
    return {"link": leg.link, "alpha_us": leg.alpha_us, "gbps": leg.gbps, "kind": leg.kind, "source": leg.source,
            "result_ids": list(leg.result_ids)}


def config_doc(answer: ConfigAnswer) -> dict[str, Any]:
    """A configuration as `replay --json` writes it (docs/json-outputs.md)."""
    return {
        "label": answer.label, "hit_ratio": answer.hit_ratio, "token_hit_ratio": answer.token_hit_ratio,
        "request_hit_ratio": answer.request_hit_ratio, "unbounded": answer.unbounded,
        "tiers": [{"name": t.name, "policy": t.policy, "capacity_bytes": t.capacity_bytes,
                   "capacity_blocks": t.capacity_blocks, "hit_ratio": t.hit_ratio,
                   "token_hit_ratio": t.token_hit_ratio, "bytes_restored": t.bytes_restored,
                   "bytes_written": t.bytes_written, "restore_s": t.restore_s, "recompute_same_s": t.recompute_s,
                   "pays_for_itself": t.pays, "price_kind": t.price.kind,
                   "restore_legs": [_leg_doc(leg) for leg in t.price.restore],
                   "writeback": _leg_doc(t.price.writeback) if t.price.writeback else None} for t in answer.tiers],
        "ttft_s": answer.ttft_s, "ttft_recompute_all_s": answer.ttft_recompute_s,
        "ttft_infinite_cache_s": answer.ttft_infinite_s, "restore_s": answer.restore_s,
        "links": [{"link": x.link, "direction": x.direction, "gbps": x.gbps, "kind": x.kind,
                   "bytes": x.bytes_moved, "utilisation": x.utilisation, "seconds_over_capacity": x.seconds_over,
                   "max_wait_s": x.max_backlog_s} for x in answer.links],
        "dropped_blocks": answer.dropped_blocks,
    }
