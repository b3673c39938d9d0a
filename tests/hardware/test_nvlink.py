"""The link between two GPUs from NVML's answers (kvbench/hardware/nvlink.py), and its peak from
peaks.toml's [[nvlink]] rows: NVLink 4 on H100/H200 and NVLink 5 on B200 are 18 links each."""

from kvbench.benches.p2p import nvbandwidth_name, pair_peak
from kvbench.hardware.facts import Gpu, Link
from kvbench.hardware.nvlink import STAGED, classify
from kvbench.hardware.peaks import nvlink_spec

A, B, C = "0000:17:00.0", "0000:18:00.0", "0000:19:00.0"


def links(*far, version=4):
    return [{"link": i, "version": version, "far": f} for i, f in enumerate(far)]


def gpu(name, bus=A):
    return Gpu(index=0, name=name, uuid="", bus_id=bus, numa_node=0, link=Link(5, 16, 5, 16), memory_bytes=None,
               bus_width_bits=None, max_memory_clock_mhz=None, pci_device_id=None, cuda_index=None)


def test_direct_links_to_the_peer_are_counted_and_links_to_a_third_gpu_are_not():
    link = classify(A, links(B, B, C, C, C), B, links(A, A), p2p_ok=True)
    assert link["kind"] == "nvlink" and link["links"] == 2 and link["via"] == "direct" and link["nvml_version"] == 4


def test_through_nvswitch_the_fewer_of_the_two_ends_links_carry_the_pair():
    link = classify(A, links(*["switch"] * 18), B, links(*["switch"] * 12), p2p_ok=True)
    assert link["kind"] == "nvlink" and link["links"] == 12 and link["via"] == "nvswitch"


def test_no_nvlink_is_pcie_peer_to_peer_or_staged_through_the_host():
    assert classify(A, [], B, [], p2p_ok=True)["kind"] == "pcie"
    none = classify(A, [], B, [], p2p_ok=False)
    assert none["kind"] == "none" and none["note"] == STAGED
    assert classify(A, [], B, [], p2p_ok=None)["kind"] == "unknown"


def test_nvlink_peaks_per_sku_are_links_times_the_per_link_rate():
    for name, version, per_link in (("NVIDIA H200", 4, 25), ("NVIDIA H100 80GB HBM3", 4, 25), ("NVIDIA B200", 5, 50)):
        spec = nvlink_spec(name)
        assert (spec["version"], spec["links"], spec["gbps_per_link"]) == (version, 18, per_link)
    nvswitch = {"kind": "nvlink", "links": 18, "via": "nvswitch"}
    assert pair_peak(nvswitch, gpu("NVIDIA H200"), gpu("NVIDIA H200", B))[0].gbps == 450
    assert pair_peak(nvswitch, gpu("NVIDIA B200"), gpu("NVIDIA B200", B))[0].gbps == 900
    peak, reason = pair_peak({"kind": "none", "note": STAGED}, gpu("NVIDIA H200"), gpu("NVIDIA H200", B))
    assert peak is None and reason == STAGED


def test_each_case_names_the_nvbandwidth_test_that_measures_the_same_copy():
    assert nvbandwidth_name("ce", "read", False) == "device_to_device_memcpy_read_ce"
    assert nvbandwidth_name("sm", "write", True) == "device_to_device_bidirectional_memcpy_write_sm"
