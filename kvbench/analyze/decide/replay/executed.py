"""The projection held against an execution: each request of a `kv.replay` run priced with the stored
α + bytes/β fit of its path, beside the time it took, p50 and p99 of each and their ratio. A projection
that misses is a finding about the model (docs/replay.md), never a number tuned away."""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.analyze.decide.replay.pricing import Leg
from kvbench.kv.geometry import ModelGeometry

REQUEST_S = "replay_request_s"  # kvbench/benches/kv/replay.py REQUEST_S


def compare(row: dict[str, Any], legs: tuple[Leg, ...], model: ModelGeometry, dtype: str, tp: int, block_tokens: int
            ) -> dict[str, Any]:
    """Projected and executed per-request restore seconds of the stored kv.replay result `row`."""
    extra = row.get("extra") or {}
    if row["status"] != "ok" or not extra.get(REQUEST_S):
        raise ValueError(f"kv.replay result {row.get('id')} is {row['status']}: {row.get('reason') or 'no request times'}")
    tokens = np.asarray(extra["replay_tokens"], dtype=np.int64)
    engine = -(-tokens // block_tokens)
    size = engine * block_tokens * model.bytes_per_token(dtype, tp)
    fragments = engine * model.layers * model.tensors_per_layer()
    projected = np.asarray([sum(leg.seconds(b, f) for leg in legs) for b, f in zip(size, fragments, strict=True)])
    executed = np.asarray(extra[REQUEST_S], dtype=np.float64)

    def pct(x: np.ndarray) -> dict[str, float]:
        return {"p50": float(np.percentile(x, 50)), "p99": float(np.percentile(x, 99))}

    p, e = pct(projected), pct(executed)
    return {
        "run_id": row.get("run_id"), "result_id": row.get("id"), "requests": int(row["params"]["requests"]),
        "restores": len(tokens), "path": " then ".join(leg.link for leg in legs) + f" (page_first → layer_first, {block_tokens}-token blocks)",
        "priced_by": [{"link": leg.link, "alpha_us": leg.alpha_us, "gbps": leg.gbps, "kind": leg.kind,
                       "source": leg.source, "result_ids": list(leg.result_ids)} for leg in legs],
        "projected_s": p, "executed_s": e, "ratio": {q: p[q] / e[q] if e[q] else None for q in p},
        "per_request": [{"request": int(r), "tokens": int(t), "projected_s": float(a), "executed_s": float(b)}
                        for r, t, a, b in zip(extra["replay_requests"], tokens, projected, executed, strict=True)],
    }
