"""Facts and the path model on a recorded sysfs tree of a two-socket H200 server."""

from dataclasses import replace
from pathlib import Path

import pytest

from kvbench.hardware import dimm, sysfs
from kvbench.hardware.facts import Dram, Gpu, HostFacts, Link
from kvbench.hardware.fingerprint import host_id
from kvbench.hardware.path import path_peak

ROOT = str(Path(__file__).resolve().parent.parent / "fixtures" / "sysfs" / "gpu-box")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_pci_links_are_read_with_generation_and_width():
    devices = {d.bdf: d for d in sysfs.pci_devices(ROOT)}
    assert "0000:00:00.0" not in devices  # no link files: not listed
    good, bad = devices["0000:1b:00.0"], devices["0000:9a:00.0"]
    assert (good.link.gen, good.link.width, good.link.max_gen) == (5, 16, 5)
    assert not good.link.downtrained
    assert (bad.link.gen, bad.link.width) == (4, 8)
    assert bad.link.downtrained and bad.numa_node == 1


def test_bus_ids_match_in_any_spelling():
    assert sysfs.pci_device("00000000:9A:00.0", ROOT).bdf == "0000:9a:00.0"
    assert sysfs.pci_device("9a:00.0", ROOT).bdf == "0000:9a:00.0"
    assert sysfs.pci_device("0000:ff:00.0", ROOT) is None


def test_numa_cpu_nics_and_nvme():
    nodes = sysfs.numa_nodes(ROOT)
    assert [n.node for n in nodes] == [0, 1]
    assert nodes[0].memory_bytes == 1056499712 * 1024
    cpu = sysfs.cpu_info(ROOT)
    assert cpu == {"cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "sockets": 2, "cores": 4, "threads": 4}
    nic = sysfs.nics(ROOT)[0]
    assert (nic.name, nic.kind, nic.rate_gbit, nic.bdf) == ("mlx5_0/1", "infiniband", 400.0, "0000:29:00.0")
    nvme = sysfs.nvme_devices(ROOT)[0]
    assert nvme.bdf == "0000:c1:00.0" and nvme.model.startswith("SAMSUNG")


def _facts() -> HostFacts:
    gpus = []
    for index, bdf in enumerate(["0000:1b:00.0", "0000:9a:00.0"]):
        dev = sysfs.pci_device(bdf, ROOT)
        gpus.append(Gpu(index, "NVIDIA H200", f"GPU-{index}", bdf, dev.numa_node, dev.link, 141 << 30, 6144, 3201))
    return HostFacts(
        hostname="gpu-box", **sysfs.cpu_info(ROOT), kernel="6.8", numa=sysfs.numa_nodes(ROOT),
        pci=sysfs.pci_devices(ROOT), gpus=tuple(gpus), nics=sysfs.nics(ROOT), nvme=sysfs.nvme_devices(ROOT),
        dram=dimm.parse_dmidecode((FIXTURES / "dmidecode-2x-ddr5.txt").read_text()),
    )


def test_path_model_takes_the_narrowest_link_as_negotiated_under_load():
    facts = _facts()
    assert path_peak([("gpu_link", 0)], facts).peak.gbps == pytest.approx(63.0, abs=0.02)
    # GPU 1 reads Gen4 x8 at rest, which an idle link may show: its peak is its max until the
    # copies themselves read it downtrained
    assert path_peak([("gpu_link", 1)], facts).peak.gbps == pytest.approx(63.0, abs=0.02)
    downtrained = path_peak([("gpu_link", 1)], facts, {1: Link(4, 8, 5, 16)})
    assert downtrained.peak.gbps == pytest.approx(15.75, abs=0.01)
    assert "downtrained" in downtrained.peak.source
    # DRAM → GPU 0: the PCIe link, not the DRAM, is the bottleneck
    both = path_peak([("dram_read",), ("gpu_link", 0)], facts)
    assert both.bottleneck == "gpu_link:0" and both.peak.gbps == pytest.approx(63.0, abs=0.02)
    # a GPU read of its own HBM: the spec sheet number
    hbm = path_peak([("hbm", 0)], facts).peak
    assert hbm.gbps == 4800 and "NVML-derived 4917 GB/s (NVML: 6144-bit bus x 3201 MHz x 2)" in hbm.source
    # NIC → downtrained GPU: the GPU link (15.75) is narrower than the 50 GB/s port
    assert path_peak([("nic", "mlx5_0/1"), ("gpu_link", 1)], facts, {1: Link(4, 8, 5, 16)}).bottleneck == "gpu_link:1"
    assert path_peak([("nvme", "nvme0")], facts).peak.gbps == 7.0
    assert path_peak([("nvme", "nvme0", "write")], facts).peak.gbps == 5.3  # writes are judged against writes


def test_dram_copy_peak_is_half_the_dram_bus():
    facts = _facts()
    peak = path_peak([("dram_copy",)], facts).peak
    assert peak.gbps == pytest.approx(2 * 4800e6 * 8 / 1e9 / 2)
    unknown = path_peak([("dram_copy",)], HostFacts(**{**facts.__dict__, "dram": Dram(None, None, None, "no DMI")}))
    assert unknown.peak is None and "no DMI" in unknown.reason


def test_an_unknown_segment_is_noted_and_does_not_void_the_known_bottleneck():
    # a VM without DMI tables: DRAM unknown, the GPU link known
    vm = HostFacts(**{**_facts().__dict__, "dram": Dram(None, None, None, "DMI lists no module")})
    h2d = path_peak([("dram_read",), ("gpu_link", 0)], vm)
    assert h2d.peak.gbps == pytest.approx(63.0, abs=0.02) and h2d.bottleneck == "gpu_link:0"
    assert "not counted, peak unknown: DRAM peak unknown: DMI lists no module" in h2d.peak.source
    assert h2d.unknown == ("DRAM peak unknown: DMI lists no module",)


def test_a_segment_without_a_peak_model_is_a_reason_not_an_exception():
    result = path_peak([("nvlink", 0, 1)], _facts())
    assert result.peak is None and "no peak model for path segment ('nvlink', 0, 1)" in result.reason


def test_hbm_copy_counts_bytes_once_so_its_peak_is_half_the_bus():
    peak = path_peak([("hbm_copy", 0)], _facts()).peak
    assert peak.gbps == 2400 and peak.source.startswith("HBM 4800 GB/s / 2")


def test_gpu_numbers_are_cuda_s_where_cuda_was_asked():
    # CUDA_VISIBLE_DEVICES=1: NVML still lists both (bus order), CUDA calls the second one GPU 0
    facts = _facts()
    only_second = (replace(facts.gpus[0], cuda_index=None), replace(facts.gpus[1], cuda_index=0))
    hidden = HostFacts(**{**facts.__dict__, "gpus": only_second})
    assert hidden.gpu(0).bus_id == "0000:9a:00.0" and hidden.gpu(1) is None
    assert "downtrained" in path_peak([("gpu_link", 0)], hidden, {0: hidden.gpu(0).link}).peak.source
    assert path_peak([("all_gpu_links",)], hidden).peak.gbps == pytest.approx(63.0, abs=0.02)
    assert path_peak([("all_gpu_links",)], hidden, {0: hidden.gpu(0).link}).peak.gbps == pytest.approx(15.75, abs=0.01)
    # no CUDA to ask (analysis on another host): NVML's numbering
    assert facts.gpu(0).bus_id == "0000:1b:00.0" and len(facts.visible_gpus()) == 2


def test_unknown_gpu_has_a_reason():
    result = path_peak([("gpu_link", 5)], _facts())
    assert result.peak is None and "GPU 5 not found" in result.reason


def test_dmidecode_parsing_counts_populated_modules_and_their_channels():
    dram = dimm.parse_dmidecode((FIXTURES / "dmidecode-2x-ddr5.txt").read_text())
    assert (dram.modules, dram.channels, dram.speed_mts, dram.total_bytes) == (2, 2, 4800, 128 << 30)
    assert dimm.parse_dmidecode("").reason


def _dmi(*locators: tuple[str, str]) -> str:
    return "\n\n".join(f"Memory Device\n\tSize: 32 GB\n\tLocator: {loc}\n\tBank Locator: {bank}\n"
                        "\tConfigured Memory Speed: 4800 MT/s" for loc, bank in locators)


@pytest.mark.parametrize("locators,channels", [
    ([("CPU0_DIMM_A1", ""), ("CPU0_DIMM_A2", ""), ("CPU0_DIMM_B1", ""), ("CPU0_DIMM_B2", "")], 2),  # 2 per channel
    ([("P1-DIMMA1", ""), ("P2-DIMMA1", "")], 2),  # one per socket
    ([("DIMM 0", "P0 CHANNEL A"), ("DIMM 1", "P0 CHANNEL A"), ("DIMM 0", "P0 CHANNEL B")], 2),  # AMD
    ([("DIMM_A1", "P0_Node0_Channel0_Dimm0"), ("DIMM_A2", "P0_Node0_Channel0_Dimm1")], 1),  # Supermicro
])
def test_two_modules_on_one_channel_share_its_bus(locators, channels):
    from kvbench.hardware.peaks import dram_peak

    dram = dimm.parse_dmidecode(_dmi(*locators))
    assert dram.modules == len(locators) and dram.channels == channels
    peak, _ = dram_peak(dram)
    assert peak.gbps == pytest.approx(channels * 4800e6 * 8 / 1e9)


def test_locators_that_name_no_channel_leave_the_peak_unknown():
    from kvbench.hardware.peaks import dram_peak

    dram = dimm.parse_dmidecode(_dmi(("Slot 7", "Not Specified"), ("Slot 8", "Not Specified")))
    assert dram.modules == 2 and dram.channels is None
    peak, reason = dram_peak(dram)
    assert peak is None and "locator 'Slot 7' names no channel" in reason


def test_host_id_ignores_current_link_state():
    facts = _facts()
    idle = HostFacts(**{**facts.__dict__, "gpus": tuple(
        Gpu(**{**g.__dict__, "link": type(g.link)(1, 16, g.link.max_gen, g.link.max_width)}) for g in facts.gpus)})
    assert host_id(idle) == host_id(facts)
    # nor CUDA's numbering (CUDA_VISIBLE_DEVICES)
    renumbered = HostFacts(**{**facts.__dict__, "gpus": tuple(replace(g, cuda_index=1 - g.index) for g in facts.gpus)})
    assert host_id(renumbered) == host_id(facts)
