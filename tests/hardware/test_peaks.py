"""Peak math against the seed documents' numbers."""

import pytest

from kvbench.hardware import peaks
from kvbench.hardware.facts import Dram, Gpu, Link, Nic


@pytest.mark.parametrize("gen,width,gbps", [
    (5, 16, 63.0), (4, 16, 31.5), (3, 16, 15.75), (4, 8, 15.75), (5, 4, 15.75),
])
def test_pcie_per_direction_matches_lanes_times_rate_times_encoding(gen, width, gbps):
    assert peaks.pcie_peak(gen, width).gbps == pytest.approx(gbps, abs=0.02)
    assert not peaks.pcie_peak(gen, width).raw


def test_pcie_gen6_is_128_raw_and_says_so():
    peak = peaks.pcie_peak(6, 16)
    assert peak.gbps == 128.0
    assert peak.raw and "raw" in peak.source


def test_downtrained_link_gets_the_negotiated_peak():
    link = Link(gen=4, width=8, max_gen=5, max_width=16)
    assert link.downtrained
    peak = peaks.link_peak(link)
    assert peak.gbps == pytest.approx(15.75, abs=0.01)
    assert "downtrained from Gen5 x16" in peak.source


@pytest.mark.parametrize("name,gbps", [
    ("NVIDIA H200", 4800), ("NVIDIA B200", 8000), ("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA H100 PCIe", 2000),
    ("NVIDIA A100-SXM4-80GB", 2039), ("NVIDIA A100-SXM4-40GB", 1555),
])
def test_hbm_spec_peaks(name, gbps):
    assert peaks.hbm_spec_peak(name).gbps == gbps


def test_hbm_from_nvml_is_bus_width_times_clock_times_two():
    gpu = Gpu(0, "NVIDIA H100 80GB HBM3", "GPU-x", "0000:1b:00.0", 0, Link(5, 16, 5, 16), 80 << 30, 5120, 2619)
    assert peaks.hbm_nvml_peak(gpu).gbps == pytest.approx(5120 / 8 * 2619e6 * 2 / 1e9)
    assert peaks.hbm_nvml_peak(gpu).gbps == pytest.approx(3352.3, abs=0.1)


def test_nic_ports_cx8_ethernet_needs_both_ports_for_100():
    cx8_port = Nic("mlx5_0/1", "ethernet", None, 0, None, model="ConnectX-8")
    assert peaks.nic_peak(cx8_port).gbps == 50.0
    assert peaks.nic_peak(cx8_port, ports=2).gbps == 100.0
    assert peaks.nic_peak(cx8_port, ports=4).gbps == 100.0  # the card's total caps it
    assert peaks.nic_spec("ConnectX-8")["ports_for_total"] == 2
    cx7 = Nic("mlx5_1/1", "infiniband", None, 0, 400.0)
    assert peaks.nic_peak(cx7).gbps == 50.0  # 400 Gb/s = 50 GB/s one way
    hdr = Nic("mlx5_2/1", "infiniband", None, 0, 200.0)
    assert peaks.nic_peak(hdr).gbps == 25.0


def test_dram_peak_is_channels_times_rate_times_eight_bytes():
    peak, reason = peaks.dram_peak(Dram(modules=8, speed_mts=4800, total_bytes=512 << 30, channels=8))
    assert reason is None
    assert peak.gbps == pytest.approx(307.2)
    peak, reason = peaks.dram_peak(Dram(None, None, None, reason="dmidecode is not installed"))
    assert peak is None and "dmidecode is not installed" in reason


def test_every_number_in_the_data_file_has_a_source():
    data = peaks.peak_data()
    for table in ("hbm", "nic"):
        assert all(entry["source"] for entry in data[table])
    assert all(v["source"] for v in data["nvme"].values())
    assert data["pcie"]["source"] and data["dram"]["source"]
