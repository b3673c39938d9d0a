"""The "peer GPU" tier of plan and the peer-GPU path of policy (issue 30): measured only from the
planned model's kv.handoff results; without one, no time and the reason (a skip, or a contiguous
gpu.p2p copy named as a ceiling, never used as a KV rate)."""

import pytest

from kvbench.analyze.decide.peer_tier import peer_tier, with_peer_tier
from kvbench.analyze.decide.policy import policies
from kvbench.analyze.decide.recompute import ComputeRate
from kvbench.analyze.decide.restore_plan import decide
from kvbench.kv.geometry import get_model

LLAMA = get_model("Llama-3.1-70B")  # 16-token pieces: 32 KiB


def _handoff(gbps, strategy="peer-read", fragment=32768, model="Llama-3.1-70B", run=1, status="ok", reason=None):
    return {"bench": "kv.handoff", "status": status, "reason": reason, "case_hash": f"h{strategy}{fragment}{model}{run}",
            "gbps_median": gbps, "gbps_p10": gbps and gbps * 0.99, "gbps_p90": gbps and gbps * 1.01,
            "peak_gbps": 450.0 if status == "ok" else None, "peak_source": "18 NVLink 4 links", "run_id": run,
            "host_id": "h", "bytes_per_op": fragment * 1000, "median_s": gbps and fragment * 1000 / (gbps * 1e9),
            "params": {"model": model, "strategy": strategy, "pair": "0-1", "tokens": 4096},
            "extra": {"fragment_bytes": fragment, "fragments": 1000,
                      "request_ms": {"p50": 2.0, "p90": 2.5, "p99": 3.0, "max": 3.1, "n": 30}} if status == "ok" else {}}


def _p2p(gbps, status="ok", reason=None):
    return {"bench": "gpu.p2p", "status": status, "reason": reason, "case_hash": f"p{gbps}{status}", "gbps_median": gbps,
            "peak_gbps": 450.0 if status == "ok" else None, "peak_source": "18 NVLink 4 links", "run_id": 7,
            "params": {"pair": "0-1", "size": 268435456}, "extra": {}}


def test_the_tier_is_measured_from_the_model_s_handoffs_with_its_request_time_and_runs():
    tier = peer_tier(LLAMA, 4096, "bf16", 1, 16, [_handoff(100.0, "gather-copy-scatter"), _handoff(150.0),
                                                  _p2p(400.0)])
    assert tier.tier.startswith("peer GPU [layer_first/16 → page_first/64]")
    assert tier.measured_gbps == pytest.approx(150.0) and tier.strategy == "peer-read"
    assert tier.peak_gbps == 450.0 and tier.request_ms["p99"] == 3.0 and tier.runs == (1,)
    answer = decide(LLAMA, 4096, "bf16", 1, [tier], ComputeRate(1000.0, "spec", "spec"))
    assert answer.tiers[0].faster in ("restore", "recompute")


def test_without_a_handoff_the_tier_has_no_time_and_names_the_p2p_ceiling_it_did_not_use():
    tier = peer_tier(LLAMA, 4096, "bf16", 1, 16, [_p2p(400.0)])
    assert tier.measured_gbps is None and tier.measured_s is None
    assert "no kv.handoff result on this host" in tier.note
    assert "gpu.p2p copied contiguous bytes at up to 400.0 GB/s" in tier.note and "not a KV handoff" in tier.note
    assert tier.peak_gbps == 450.0  # the pair's link, a spec figure


def test_another_model_s_handoff_is_not_this_model_s():
    tier = peer_tier(LLAMA, 4096, "bf16", 1, 16, [_handoff(150.0, model="DeepSeek-V3")])
    assert tier.measured_gbps is None and "no kv.handoff result of Llama-3.1-70B (measured: DeepSeek-V3)" in tier.note


def test_a_skipped_handoff_says_why():
    skipped = _handoff(None, status="skipped", reason="kv.handoff moves KV between two GPUs; this host has 1")
    tier = peer_tier(LLAMA, 4096, "bf16", 1, 16, [skipped, _p2p(None, "skipped", "gpu.p2p copies between two GPUs")])
    assert tier.measured_gbps is None and tier.peak_gbps is None
    assert "kv.handoff skipped: kv.handoff moves KV between two GPUs; this host has 1" in tier.note
    assert "gpu.p2p skipped" in tier.note and "no spec peak" in tier.note


def test_the_tier_shows_where_a_peer_could_exist_and_alone_only_when_measured():
    assert with_peer_tier([], LLAMA, 4096, "bf16", 1, 16, [], gpu_count=1) == []
    (only,) = with_peer_tier([], LLAMA, 4096, "bf16", 1, 16, [_handoff(150.0)], gpu_count=2)
    assert only.measured_gbps == pytest.approx(150.0)
    assert with_peer_tier([], LLAMA, 4096, "bf16", 1, 16, [], gpu_count=8) == []  # nothing to say alone
    restore = peer_tier(LLAMA, 4096, "bf16", 1, 16, [_handoff(1.0)])  # any tier to sit beside
    (_, peer) = with_peer_tier([restore], LLAMA, 4096, "bf16", 1, 16, [], gpu_count=8)
    assert peer.measured_gbps is None and "no kv.handoff result on this host" in peer.note


def test_policy_has_a_peer_gpu_path_from_handoffs():
    (policy,) = policies([_handoff(100.0, "gather-copy-scatter"), _handoff(150.0)])
    assert policy.path == "peer GPU" and policy.strategy == "peer-read"
    assert policy.layout == "layer_first/16 → page_first/64"
