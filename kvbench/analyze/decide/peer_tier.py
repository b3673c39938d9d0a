"""The "peer GPU" tier of `plan` (and the path of `policy`): a decode GPU taking a request's KV from
the prefill GPU beside it (P/D disaggregation inside a server), from this host's `kv.handoff`
results of the planned model.

Nothing is invented: without a kv.handoff result of the model the tier has no measured time and says
why (the case skipped and its reason, or only a contiguous gpu.p2p copy was measured: a ceiling, not a
KV handoff, named in the note with its run), and its spec peak is the pair's link as gpu.p2p or
kv.handoff recorded it.
"""

from __future__ import annotations

from typing import Any

from kvbench.analyze.decide.restore_plan import TierPlan, is_model, latest_per_case, tier_plan
from kvbench.kv.geometry import ModelGeometry

TIER = "peer GPU"
BENCHES = ("kv.handoff", "gpu.p2p")


def handoff_layout(params: dict[str, Any]) -> str:
    """`layer_first/16 → page_first/64`: a handoff's two pools (kv.handoff's defaults where a row omits one)."""
    return (f"{params.get('src_layout') or 'layer_first'}/{params.get('src_block_tokens') or 16} → "
            f"{params.get('dst_layout') or 'page_first'}/{params.get('dst_block_tokens') or 64}")


def _skip_note(rows: list[dict[str, Any]], bench: str) -> str | None:
    reasons = sorted({str(r.get("reason") or "no reason recorded") for r in rows
                      if r["bench"] == bench and r["status"] != "ok"})
    return f"{bench} {'/'.join(sorted({r['status'] for r in rows if r['bench'] == bench}))}: {reasons[0]}" \
        if reasons else None


def peer_tier(model: ModelGeometry, tokens: int, dtype: str, tp: int, block_tokens: int,
              rows: list[dict[str, Any]]) -> TierPlan:
    """The peer-GPU tier for `tokens` of `model` from `rows` (this host's kv.handoff and gpu.p2p rows):
    measured from the model's ok kv.handoff rows (at `block_tokens` × bytes per token and unit, the
    handoff's piece size, interpolated, never extrapolated), else no measurement and the reason."""
    kv_bytes = model.kv_bytes(tokens, dtype, tp)
    fragment = block_tokens * model.unit_bytes_per_token(dtype, tp)
    latest = [r for r in latest_per_case(rows) if r["bench"] in BENCHES]
    mine = [r for r in latest if r["bench"] == "kv.handoff" and r["status"] == "ok" and is_model(r["params"], model.name)]
    if mine:
        layouts = sorted({handoff_layout(r["params"]) for r in mine})
        return tier_plan(f"{TIER} [{', '.join(layouts)}]", mine, kv_bytes, fragment)
    p2p = [r for r in latest if r["bench"] == "gpu.p2p" and r["status"] == "ok"]
    peak_row = next((r for r in latest if r["status"] == "ok" and r.get("peak_gbps")), None)
    notes = []
    others = sorted({str(r["params"].get("model")) for r in latest if r["bench"] == "kv.handoff" and r["status"] == "ok"})
    if others:
        notes.append(f"no kv.handoff result of {model.name} (measured: {', '.join(others)})")
    else:
        notes.append(_skip_note(latest, "kv.handoff") or "no kv.handoff result on this host")
    if p2p:
        best = max(p2p, key=lambda r: r["gbps_median"])
        notes.append(f"gpu.p2p copied contiguous bytes at up to {best['gbps_median']:.1f} GB/s (pair "
                     f"{best['params'].get('pair')}, run {best.get('run_id')}): a ceiling, not a KV handoff")
    else:
        notes.append(_skip_note(latest, "gpu.p2p") or "no gpu.p2p result on this host")
    peak = peak_row["peak_gbps"] if peak_row else None
    if peak is None:
        notes.append("no spec peak")
    return TierPlan(tier=TIER, kv_bytes=kv_bytes, peak_gbps=peak, peak_s=kv_bytes / (peak * 1e9) if peak else None,
                    measured_gbps=None, measured_s=None, strategy=None, note="; ".join(notes))


def with_peer_tier(tiers: list[TierPlan], model: ModelGeometry, tokens: int, dtype: str, tp: int, block_tokens: int,
                   rows: list[dict[str, Any]], gpu_count: int) -> list[TierPlan]:
    """`tiers` and the peer-GPU tier after them, where the host has GPU-to-GPU results or two GPUs or
    more (`rows`: any of the host's results; plan and the report call this one function). Alone (no
    restore tier) only when it holds a measurement."""
    peer_rows = [r for r in rows if r["bench"] in BENCHES]
    if not peer_rows and gpu_count < 2:
        return tiers
    peer = peer_tier(model, tokens, dtype, tp, block_tokens, peer_rows)
    return tiers + [peer] if tiers or peer.measured_gbps else tiers
