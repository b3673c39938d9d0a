"""Prices from this host's stored results, spec where none was measured (and said so), and a replay
whose latencies move with the capacities it is given."""

import numpy as np
import pytest

from kvbench.analyze.decide.replay.pricing import tier_prices
from kvbench.analyze.decide.replay.project import Setting, project
from kvbench.analyze.decide.replay.result import TierSpec
from kvbench.analyze.decide.recompute import ComputeRate
from kvbench.errors import BadInput
from kvbench.kv.geometry import get_model
from kvbench.kv.trace import read_trace

MODEL = get_model("Llama-3.1-8B")
ALPHA_US, BETA_GBPS = 2.0, 20.0


def restore_rows(src="pinned", dst="device", model="Llama-3.1-8B", gbps=BETA_GBPS):
    """kv.restore results of a block-size sweep that follow α + bytes/β exactly."""
    rows = []
    for i, bt in enumerate((4, 16, 64, 256)):
        fragments = 1024 // bt * MODEL.layers * 2
        size = 1024 * MODEL.bytes_per_token("bf16")
        seconds = fragments * ALPHA_US * 1e-6 + size / (gbps * 1e9)
        rows.append({"id": 10 + i, "run_id": 3, "bench": "kv.restore", "case_hash": f"c{i}", "status": "ok",
                     "params": {"model": model, "src": src, "dst": dst, "block_tokens": bt, "tokens": 1024,
                                "strategy": "ce-batch"},
                     "extra": {"fragments": fragments}, "bytes_per_op": size, "median_s": seconds,
                     "gbps_median": size / seconds / 1e9})
    return rows


def test_a_measured_fit_prices_the_dram_tier_and_names_its_results():
    (dram,) = tier_prices(["dram"], restore_rows(), MODEL)
    (leg,) = dram.restore
    assert leg.link == "DRAM → GPU" and leg.kind == "measured"
    assert leg.alpha_us == pytest.approx(ALPHA_US) and leg.gbps == pytest.approx(BETA_GBPS)
    assert leg.result_ids == (10, 11, 12, 13)
    assert dram.writeback.kind == "spec"  # no kv.offload nor pcie.d2h: PCIe's spec, labelled
    assert dram.kind == "spec"


def test_without_measurements_every_link_is_spec_and_says_so():
    prices = tier_prices(["hbm", "dram", "nvme", "remote"], [], MODEL)
    assert prices[0].restore == () and prices[0].kind == "in place"
    for price in prices[1:]:
        assert price.kind == "spec"
        assert all(leg.source.startswith("spec") for leg in price.restore + (price.writeback,))
    assert [leg.link for leg in prices[2].restore] == ["file → DRAM", "DRAM → GPU"]


def test_another_models_results_do_not_price_this_one():
    (dram,) = tier_prices(["dram"], restore_rows(model="Llama-3.1-70B"), MODEL)
    assert dram.restore[0].kind == "spec"


def test_the_host_gather_needs_its_measurement():
    (dram,) = tier_prices(["dram"], restore_rows("pageable", "pageable"), MODEL, into="dram")
    assert dram.restore[0].link == "DRAM → DRAM" and dram.restore[0].kind == "measured"
    with pytest.raises(BadInput, match="kvbench run --suite replay"):
        tier_prices(["dram"], [], MODEL, into="dram")


def series(first_id, gbps, points=4, **params):
    """A DRAM → DRAM kv.restore sweep at β `gbps` with `params` (layouts, selection), ids from `first_id`."""
    rows = restore_rows("pageable", "pageable", gbps=gbps)[:points]
    for i, row in enumerate(rows):
        row["id"], row["case_hash"] = first_id + i, f"{first_id}-{i}"
        row["params"] = {**row["params"], **params}
    return rows


def test_the_gather_is_priced_by_a_fit_over_what_a_replay_moves():
    """The fit over the replay's layouts and slot order prices its gather, though another series has more
    points or is newer; one of another order prices only where none matches, and says so."""
    same = {"src_layout": "page_first", "dst_layout": "layer_first"}
    sequential = series(100, 9.0, 3, selection="sequential", **same)
    random = series(200, 5.0, 4, selection="random", **same)  # newer, more block sizes
    other = series(300, 3.0, 4, selection="sequential", src_layout="layer_first", dst_layout="page_first")
    (dram,) = tier_prices(["dram"], sequential + random + other, MODEL, into="dram")
    leg = dram.restore[0]
    assert leg.result_ids == (100, 101, 102) and leg.gbps == pytest.approx(9.0)
    assert "not the replay" not in leg.source
    (dram,) = tier_prices(["dram"], random + other, MODEL, into="dram")
    assert dram.restore[0].result_ids == (200, 201, 202, 203)  # the replay's layouts beat its order
    assert "random slots, not the replay's consecutive ones" in dram.restore[0].source
    (dram,) = tier_prices(["dram"], other, MODEL, into="dram")
    assert "layer_first → page_first, not the replay's page_first → layer_first" in dram.restore[0].source


@pytest.fixture(scope="module")
def trace():
    return read_trace("mooncake-conversation").window(0, 3000)


def test_capacity_moves_the_hit_ratio_and_the_latencies_it_prices(trace):
    setting = Setting(MODEL, "bf16", 1, 16, ComputeRate(989.0, "given", "given"), 0.5)
    rows = restore_rows()
    answers = []
    for dram in (10**11, 10**12):
        tiers = [TierSpec("hbm", 2 * 10**10, "lru"), TierSpec("dram", dram, "lru")]
        answers.append(project(trace, tiers, tier_prices([t.name for t in tiers], rows, MODEL), setting))
    small, large = answers
    assert large.hit_ratio > small.hit_ratio
    assert large.tiers[1].bytes_restored > small.tiers[1].bytes_restored
    assert large.tiers[1].restore_s > small.tiers[1].restore_s
    assert large.ttft_s["p50"] != small.ttft_s["p50"]  # not the simulator whose latencies never moved
    assert small.ttft_recompute_s == large.ttft_recompute_s  # recompute-everything is capacity-free
    assert small.unbounded == large.unbounded
    assert large.tiers[1].capacity_blocks == 10**12 // MODEL.kv_bytes(512, "bf16")


def test_a_link_that_cannot_keep_up_shows_it(trace):
    setting = Setting(MODEL, "bf16", 1, 16, ComputeRate(989.0, "given", "given"), 0.5)
    tiers = [TierSpec("hbm", 2 * 10**10, "lru"), TierSpec("dram", 10**12, "lru")]
    fast = project(trace, tiers, tier_prices(["hbm", "dram"], restore_rows(), MODEL), setting)
    slow_rows = [{**r, "median_s": r["median_s"] * 1000} for r in restore_rows()]  # a 1000× slower link
    slow = project(trace, tiers, tier_prices(["hbm", "dram"], slow_rows, MODEL), setting)
    (link_fast,) = [x for x in fast.links if x.direction == "restore"]
    (link_slow,) = [x for x in slow.links if x.direction == "restore"]
    assert link_slow.seconds_over > link_fast.seconds_over
    assert link_slow.max_backlog_s > link_fast.max_backlog_s
    assert slow.ttft_s["p99"] > fast.ttft_s["p99"]
    assert not slow.tiers[1].pays and fast.tiers[1].pays  # named: slower than recomputing what it served
    assert np.isfinite(slow.ttft).all()
