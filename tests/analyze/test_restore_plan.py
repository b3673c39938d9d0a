import pytest

from kvbench.analyze.decide.restore_plan import interpolate, restore_plan, tier_of
from kvbench.kv.geometry import get_model


def test_tiers_are_named_by_memory_kinds():
    assert tier_of({"src": "pinned", "dst": "device:0"}) == "DRAM → GPU"
    assert tier_of({"src": "numa:1", "dst": "pageable"}) == "DRAM → DRAM"
    assert tier_of({"src": "file", "dst": "device"}) == "file → GPU"


def test_interpolation_stays_inside_the_sweep():
    points = {4096: (10.0, "a"), 65536: (20.0, "b")}
    assert interpolate(points, 4096) == (10.0, "a")
    gbps, strategy = interpolate(points, 16384)  # halfway in log2: 12 → 14 → 16
    assert gbps == pytest.approx(15.0) and "interpolated" in strategy
    assert interpolate(points, 2048) is None and interpolate(points, 1 << 20) is None


def _row(case, strategy, fragment_bytes, gbps, peak=None, src="pinned", dst="device"):
    return {"bench": "kv.restore", "status": "ok", "case_hash": case, "gbps_median": gbps, "peak_gbps": peak,
            "peak_source": None if peak else "DRAM peak unknown: no DMI",
            "params": {"strategy": strategy, "src": src, "dst": dst}, "extra": {"fragment_bytes": fragment_bytes}}


def test_plan_uses_the_best_strategy_at_the_models_fragment_size():
    llama = get_model("Llama-3.1-70B")  # 16-token blocks → 32 KiB fragments
    rows = [
        _row("a", "ce-loop", 32768, 5.0, peak=63.0), _row("b", "sm-gather", 32768, 50.0, peak=63.0),
        _row("c", "contiguous", 32768, 60.0, peak=63.0), _row("a", "ce-loop", 32768, 6.0, peak=63.0),
        _row("h", "host", 2048, 9.0, src="pageable", dst="pageable"),
    ]
    plans = {p.tier: p for p in restore_plan(llama, 4096, "bf16", 1, 16, rows)}
    gpu = plans["DRAM → GPU"]
    assert gpu.kv_bytes == 4096 * 327_680
    assert gpu.peak_s == pytest.approx(gpu.kv_bytes / 63e9)
    assert gpu.measured_gbps == 50.0 and gpu.strategy == "sm-gather"  # not the contiguous ceiling
    assert gpu.measured_s == pytest.approx(gpu.kv_bytes / 50e9)
    host = plans["DRAM → DRAM"]
    assert host.measured_s is None and "no measurement at 32768 B" in host.note
    assert "DRAM peak unknown" in host.note


def _built(strategy, fragments_submitted, gbps, **params):
    """A result row as `kv.restore` builds it for `strategy` (kv.layout_metadata + Result.to_row)."""
    from kvbench.benches import get_bench
    from kvbench.benches.kv import layout_metadata
    from kvbench.kv.layouts import KVShape
    from kvbench.measure.measurement import Measurement
    from kvbench.run.result import Result

    spec = get_bench("kv.restore")
    canonical = spec.canonical_params({"model": "Llama-3.1-70B", "tokens": 1024, "strategy": strategy, **params})
    shape = KVShape.of(get_model("Llama-3.1-70B"), 16, "bf16")
    metadata = {**layout_metadata(shape, 64, 256, 64 * 160, "random"), "fragments": fragments_submitted}
    nbytes = 64 * shape.block_bytes
    m = Measurement(tuple([nbytes / (gbps * 1e9)] * 5), 1, nbytes, "perf_counter", 0.0, True)
    return {**Result("kv.restore", canonical, strategy, "ok", measurement=m, metadata=metadata).to_row(),
            "case_hash": strategy}


@pytest.mark.parametrize("strategy,params", [
    *[(s, {}) for s in ("host", "host-numpy", "contiguous")],
    *[(s, {"src": "pinned", "dst": "device"}) for s in ("ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged",
                                                         "gpu-contiguous")],
    ("nixl", {"src": "file"}), ("nixl", {"src": "remote"}),
])
def test_plan_and_report_read_what_every_strategy_records(strategy, params):
    from kvbench.report.content import build
    from kvbench.store.records import ResultRecord

    row = _built(strategy, 1 if strategy in ("contiguous", "gpu-contiguous") else 64 * 160, 20.0, **params)
    plans = restore_plan(get_model("Llama-3.1-70B"), 4096, "bf16", 1, 16, [row])
    assert len(plans) == 1
    if strategy in ("contiguous", "gpu-contiguous"):  # a ceiling is not a way to restore fragmented KV
        assert plans[0].measured_gbps is None
    else:
        assert plans[0].measured_gbps == pytest.approx(20.0) and plans[0].strategy == strategy
    run = {"id": 1, "host_id": "h", "context_id": "c"}
    content = build([{"run": run, "results": [ResultRecord.from_row(row, [1.0] * 5).to_json()]}])
    assert content.plan and content.plan[0].tier == plans[0].tier


def test_a_two_hop_restore_is_a_tier_beside_the_direct_one():
    from kvbench.analyze.decide.restore_plan import tier_of

    assert tier_of({"src": "file", "dst": "pageable", "via": "none"}) == "file → DRAM"
    assert tier_of({"src": "file", "dst": "device:0", "via": "pinned"}) == "file → DRAM (pinned staging) → GPU"
    assert tier_of({"src": "remote", "dst": "pageable"}) == "remote → DRAM"  # stored before via= existed
