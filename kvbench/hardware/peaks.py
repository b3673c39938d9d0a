"""Spec-sheet peaks and the formulas that derive them (data in peaks.toml)."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kvbench.hardware.facts import Dram, Gpu, Link, Nic

_DATA = Path(__file__).with_name("peaks.toml")


@dataclass(frozen=True)
class Peak:
    """A peak rate in decimal GB/s with where it comes from; `raw` when overheads are not deducted."""

    gbps: float
    source: str
    raw: bool = False


# A result above its spec peak by more than this is a measurement bug, never a result nor a pass:
# timer resolution and a datasheet's rounding stay well inside it. The one threshold for the run's
# warning (result.py), the tables and report that show it, and every acceptance rule kind.
ABOVE_PEAK_TOLERANCE = 0.02


def above_peak(efficiency: float | None) -> bool:
    """Whether a rate at `efficiency` (fraction of its peak) is above the peak beyond the tolerance."""
    return efficiency is not None and efficiency > 1 + ABOVE_PEAK_TOLERANCE


def above_peak_warning(efficiency: float) -> str:
    """The words every surface uses for such a result."""
    return (f"above its peak by more than {ABOVE_PEAK_TOLERANCE:.0%} ({efficiency:.1%} of peak): "
            "a measurement bug, not a result")


@functools.cache
def peak_data() -> dict:
    with _DATA.open("rb") as f:
        return tomllib.load(f)


def pcie_peak(gen: int, width: int) -> Peak:
    """Per-direction PCIe peak: lanes × GT/s ÷ 8 × encoding. Gen5 x16 → 63.0 GB/s."""
    table = peak_data()["pcie"]
    spec = table["gen"].get(str(gen))
    if spec is None:
        raise ValueError(f"no PCIe generation {gen} in the peaks table")
    num, den = spec["encoding"]
    gbps = width * spec["gts"] / 8 * num / den
    raw = bool(spec.get("raw", False))
    label = f"PCIe Gen{gen} x{width} per direction{' (raw, before FLIT/FEC overhead)' if raw else ''}"
    return Peak(gbps, f"{label}; {table['source']}", raw)


def link_peak(link: Link) -> Peak | None:
    """The peak of a link *as negotiated* (current gen/width), None when they are unknown."""
    if link.gen is None or link.width is None:
        return None
    peak = pcie_peak(link.gen, link.width)
    if link.downtrained:
        return Peak(peak.gbps, f"{peak.source}; link downtrained from Gen{link.max_gen} x{link.max_width}", peak.raw)
    return peak


def hbm_spec_peak(gpu_name: str) -> Peak | None:
    """The datasheet HBM bandwidth of the GPU named `gpu_name` (NVML name), None if unknown."""
    for entry in peak_data()["hbm"]:
        if entry["match"].lower() in gpu_name.lower():
            return Peak(float(entry["gbps"]), entry["source"])
    return None


def spec_gpu_names() -> list[str]:
    """The GPUs with a dense bf16 datasheet figure in peaks.toml, as `--gpu` takes them."""
    return [entry["match"] for entry in peak_data()["bf16"]]


def bf16_spec_tflops(gpu_name: str) -> tuple[float, str] | None:
    """(dense bf16 TFLOP/s, source) from the datasheet of the GPU named `gpu_name`, None if unknown."""
    for entry in peak_data()["bf16"]:
        if entry["match"].lower() in gpu_name.lower():
            return float(entry["tflops"]), entry["source"]
    return None


def hbm_nvml_peak(gpu: Gpu) -> Peak | None:
    """bus width × max memory clock × 2 (double data rate), from NVML's own answers."""
    if not gpu.bus_width_bits or not gpu.max_memory_clock_mhz:
        return None
    gbps = gpu.bus_width_bits / 8 * gpu.max_memory_clock_mhz * 1e6 * 2 / 1e9
    return Peak(gbps, f"NVML: {gpu.bus_width_bits}-bit bus x {gpu.max_memory_clock_mhz} MHz x 2")


def nic_peak(nic: Nic, ports: int = 1) -> Peak | None:
    """One-direction peak over `ports` ports of `nic`; the port rate the driver reports wins."""
    spec = next((e for e in peak_data()["nic"] if nic.model and e["match"].lower() in nic.model.lower()), None)
    if nic.rate_gbit:
        return Peak(nic.rate_gbit * ports / 8, f"port rate {nic.rate_gbit:g} Gb/s x {ports} port(s) / 8 (driver)")
    if spec:
        per_port = spec["port_gbit"] / 8
        return Peak(min(per_port * ports, spec["total_gbps"]), spec["source"])
    return None


def nic_spec(model: str) -> dict | None:
    """The datasheet entry for a NIC model (port rate, ports needed for the total)."""
    return next((e for e in peak_data()["nic"] if e["match"].lower() in model.lower()), None)


def nvme_peak(link: Link, operation: str = "read") -> Peak | None:
    """Sequential read (or write) class of an NVMe drive by its link generation, capped by the link."""
    if link.gen is None:
        return None
    cls = peak_data()["nvme" if operation == "read" else "nvme_write"].get(f"gen{link.gen}")
    if cls is None:
        return None
    by_link = link_peak(link)
    if by_link and by_link.gbps < cls["gbps"]:
        return by_link
    return Peak(float(cls["gbps"]), cls["source"])


def dram_peak(dram: Dram) -> tuple[Peak | None, str | None]:
    """(populated channels × MT/s × 8 B, None) or (None, why it cannot be computed)."""
    if dram.channels is None or dram.speed_mts is None:
        return None, f"DRAM peak unknown: {dram.reason or 'no DIMM facts'}"
    spec = peak_data()["dram"]
    gbps = dram.channels * dram.speed_mts * 1e6 * spec["bytes_per_transfer"] / 1e9
    return Peak(gbps, f"{dram.channels} channels ({dram.modules} modules) x {dram.speed_mts} MT/s x 8 B; "
                      f"{spec['source']}"), None
