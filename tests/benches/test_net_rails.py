"""Rails (issue 27 item 4): one transfer spread over several NICs — dealt by kvbench (rails=a,b) or by
UCX itself (rails=N, net_devices=a,b) — each rail's bytes where they can be known, and the peak:
the NICs' sum capped by the PCIe link the bytes cross. Run on the loopback only."""

from __future__ import annotations

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.backends.ucx_protocols import lane_shares
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.hardware.facts import Link, Nic, PciDevice
from kvbench.hardware.nic_counters import read_counters
from kvbench.hardware.path import path_peak
from kvbench.run.runner import run_case
from tests.benches.test_net import FAST, case

needs_ucx = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                               reason=f"{backend_unavailable_reason('UCX')}")


def _cx8_facts(slot: Link | None = None):
    """The recorded 2-GPU box (Gen5 x16 H200s) with a CX-8 (2 x 400GbE ports, 100 GB/s a card)."""
    from tests.hardware.test_sysfs import _facts

    facts = _facts()
    cx8 = (Nic("mlx5_2/1", "ethernet", "0000:ee:00.0", 0, None, model="ConnectX-8"),
           Nic("mlx5_2/2", "ethernet", "0000:ee:00.0", 0, None, model="ConnectX-8"))
    pci = facts.pci + ((PciDevice("0000:ee:00.0", "0x15b3", "0x1023", "0x020000", 0, slot),) if slot else ())
    return type(facts)(**{**facts.__dict__, "nics": facts.nics + cx8, "pci": pci})


def test_rails_into_gpu_memory_are_capped_by_the_gpu_link_cx8_on_gen5():
    facts = _cx8_facts()
    host = path_peak([("nic_rails", ("mlx5_2:1", "mlx5_2:2"), None)], facts).peak
    assert host.gbps == 100.0 and host.source.startswith("spec: ")
    into_gpu = path_peak([("nic_rails", ("mlx5_2:1", "mlx5_2:2"), 0)], facts).peak
    assert into_gpu.gbps == pytest.approx(63.0, abs=0.05)  # GPU 0's Gen5 x16, not the card's 100 GB/s
    assert into_gpu.source.startswith("spec: GPU 0's PCIe link") and "caps the rails' 100.0 GB/s" in into_gpu.source
    # one port (50 GB/s) is narrower than the GPU's link: the port stands
    assert path_peak([("nic_rails", ("mlx5_2:1",), 0)], facts).peak.gbps == 50.0
    assert path_peak([("nic_rails", ("mlx5_2:1",), 7)], facts).peak is None  # no GPU 7: no cap known, no peak


def test_a_card_in_a_narrower_slot_is_capped_by_its_own_link():
    facts = _cx8_facts(slot=Link(5, 16, 6, 16))  # a Gen6 card trained at Gen5 x16
    peak = path_peak([("nic_rails", ("mlx5_2:1", "mlx5_2:2"), None)], facts).peak
    assert peak.gbps == pytest.approx(63.0, abs=0.05) and "capped by its PCIe link" in peak.source


def test_rails_n_path_is_the_devices_named_and_no_peak_when_ucx_picks_among_more():
    spec = get_bench("net.write")
    both = spec.canonical_params({"peer": "remote", "rails": "2", "net_devices": "mlx5_0:1,mlx5_1:1",
                                  "local": "pinned"})
    assert spec.path(both) == [("nic_rails", ("mlx5_0:1", "mlx5_1:1"), None)]
    some = spec.canonical_params({"peer": "remote", "rails": "1", "net_devices": "mlx5_0:1,mlx5_1:1"})
    assert spec.path(some) == [("remote_peer", "127.0.0.1")]


@pytest.mark.parametrize("params,words", [
    ({"rails": "0"}, "give at least 1 rail"),
    ({"rails": "lo,lo", "net_devices": "lo"}, "give net_devices only with rails=N"),
])
def test_rails_bad_input(params, words):
    spec = get_bench("net.write")
    with pytest.raises(BadInput, match=words):
        spec.validate(spec.canonical_params(params))


def test_net_devices_at_its_default_keeps_the_cases_measured_before_it():
    from kvbench.benches.params import case_hash

    spec = get_bench("net.write")
    params = spec.canonical_params({})
    before = {k: v for k, v in params.items() if k != "net_devices"}
    assert case_hash("net.write", params, spec.params) == case_hash("net.write", before, spec.params)


def test_ucx_planned_split_is_read_from_its_protocol_table():
    # the row UCX prints for a two-lane zero-copy put ("%zu%% on " lanes joined by " and ")
    table = {"write": ["0..8K short rc_mlx5/mlx5_0:1",
                       "8K..inf zero-copy 60% on rc_mlx5/mlx5_0:1 and 40% on rc_mlx5/mlx5_1:1"]}
    assert lane_shares(table) == {"rc_mlx5/mlx5_0:1": 0.6, "rc_mlx5/mlx5_1:1": 0.4}
    assert lane_shares({"write": ["0..inf zero-copy tcp/lo"]}) == {}


def test_counters_of_an_interface_and_of_no_device():
    counters, why = read_counters("lo")
    assert why is None and set(counters) == {"tx_bytes", "rx_bytes"}
    counters, why = read_counters("no-such-nic0:1")
    assert counters is None and "no byte counters for no-such-nic0:1" in why


@needs_ucx
def test_rails_n_lets_ucx_spread_over_the_named_devices_on_the_loopback(facts, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")  # over the loopback interface, not shared memory
    result = run_case(case("net.write", peer="local", rails="2", net_devices="lo"), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    env = result.metadata["ucx_env"]
    assert env["UCX_MAX_RMA_RAILS"] == "2" and env["UCX_MAX_RNDV_RAILS"] == "2" and env["UCX_NET_DEVICES"] == "lo"
    assert "tcp/lo" in result.metadata["ucx_devices"]
    rails = {r["rail"]: r for r in result.metadata["rail_bytes"]}
    assert "tcp/lo" in rails
    if len(rails) == 1:  # UCX's table names one lane: it carried every byte
        assert rails["tcp/lo"]["bytes_per_op"] == result.measurement.bytes_per_op
    else:  # several lanes and no split in the table: unknown, said so, never guessed
        assert all(r["bytes_per_op"] is None and "does not report" in r["how"] for r in rails.values())
    lo = result.metadata["rail_counters"]["lo"]
    assert lo["tx_bytes"] >= result.measurement.bytes_per_op  # every timed byte crossed lo (and more)
    assert "UCX_MAX_RMA_RAILS" not in __import__("os").environ  # set only while the agents started


@needs_ucx
def test_rails_dealt_by_kvbench_record_each_rail_s_bytes(facts):
    result = run_case(case("net.read", peer="local", rails="lo,lo"), facts, FAST)
    assert result.status == "ok", result.reason
    rails = result.metadata["rail_bytes"]
    assert [r["rail"] for r in rails] == ["lo", "lo"]
    assert [r["bytes_per_op"] for r in rails] == [8 * 64 * 1024, 8 * 64 * 1024]  # 16 blocks dealt 8 and 8
    assert sum(r["bytes_per_op"] for r in rails) == result.measurement.bytes_per_op
    assert set(result.metadata["rail_counters"]) == {"lo", "note"}


@needs_ucx
def test_a_case_without_rails_records_none(facts):
    result = run_case(case("net.write", peer="inproc"), facts, FAST)
    assert result.status == "ok" and "rail_bytes" not in result.metadata
