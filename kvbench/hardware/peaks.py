"""Spec-sheet peaks and the formulas that derive them (data in peaks.toml)."""

from __future__ import annotations

import functools
import os
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
# warning (run/result.py), the tables and report that show it, and every acceptance rule kind.
ABOVE_PEAK_TOLERANCE = 0.02


def above_peak(efficiency: float | None) -> bool:
    """Whether a rate at `efficiency` (fraction of its peak) is above the peak beyond the tolerance."""
    return efficiency is not None and efficiency > 1 + ABOVE_PEAK_TOLERANCE


def above_peak_warning(efficiency: float, peak_source: str | None = None) -> str:
    """The words every surface uses for such a result. Where the user's peaks file (--peaks) gave the
    peak, that figure is the likelier cause (a peak set too low), and the words say so first."""
    if peak_source and USER_PEAKS_LABEL in peak_source:
        return (f"above the peak your peaks file gives by more than {ABOVE_PEAK_TOLERANCE:.0%} ({efficiency:.1%} "
                "of it): that peak is likelier too low than the measurement wrong; check the figure in your "
                "--peaks file (a measurement bug only if the peak is right)")
    return (f"above its peak by more than {ABOVE_PEAK_TOLERANCE:.0%} ({efficiency:.1%} of peak): "
            "a measurement bug, not a result")


# A user's own peaks (what DMI hides in a VM, what peaks.toml lacks), in peaks.toml's shape: `[dram]`
# with gbps and source; `[[hbm]]`, `[[nic]]`, `[[bf16]]` entries as in peaks.toml. They win over the
# shipped ones, and every source they give is labelled as the user's.
PEAKS_ENV = "KVBENCH_PEAKS"
USER_PEAKS_LABEL = "your peaks file"  # how every figure from the user's own peaks file is labelled
_USER_TABLES = {"dram": ("gbps",), "hbm": ("match", "gbps"), "nic": ("match", "port_gbit", "total_gbps"),
                "bf16": ("match", "tflops")}


def peak_data() -> dict:
    """peaks.toml, with the user's peaks file ($KVBENCH_PEAKS, set by --peaks) laid over it."""
    return _peak_data(os.environ.get(PEAKS_ENV) or None)


@functools.cache
def _peak_data(user_file: str | None) -> dict:
    with _DATA.open("rb") as f:
        data = tomllib.load(f)
    if user_file is None:
        return data
    for key, given in user_peaks(user_file).items():
        data[key] = {**data[key], **given} if key == "dram" else [*given, *data[key]]
    return data


def user_peaks(path: str) -> dict:
    """The user's peaks file, checked: known tables only, every rate a finite number above 0 and every
    entry with its source, which comes back labelled as the user's. `BadInput` naming the fault."""
    from kvbench.errors import BadInput
    from kvbench.input_files import read_toml_file
    from kvbench.redact import redact
    from kvbench.units import MAX_GBPS

    where = f"peaks file '{path}'"
    _, data = read_toml_file(Path(path), where)
    unknown = sorted(set(data) - set(_USER_TABLES))
    if unknown or not data:
        raise BadInput(f"{where}: give [dram] or [[hbm]], [[nic]], [[bf16]] tables"
                       + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    out: dict = {}
    for key, value in data.items():
        entries = [value] if key == "dram" else value
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise BadInput(f"{where}: '{key}' must be {'a table' if key == 'dram' else 'an array of tables'}")
        for entry in entries:
            extra = sorted(set(entry) - {*_USER_TABLES[key], "source"})
            if extra:  # a misspelt key would be dropped in silence and the shipped figure used instead
                raise BadInput(f"{where}: [{key}] has unknown key(s) {', '.join(extra)}: give "
                               f"{', '.join((*_USER_TABLES[key], 'source'))}")
            for field in (*_USER_TABLES[key], "source"):
                value, number = entry.get(field), field in ("gbps", "port_gbit", "total_gbps", "tflops")
                if number and not (isinstance(value, int | float) and not isinstance(value, bool)
                                   and 0 < value < float("inf")):
                    raise BadInput(f"{where}: [{key}] needs {field} = a number above 0 (found {value!r})")
                # the bound an export is read back with (store/records.py): a peak kvbench wrote must read again
                ceiling = {"gbps": MAX_GBPS, "total_gbps": MAX_GBPS, "port_gbit": 8 * MAX_GBPS}.get(field)
                if ceiling is not None and value > ceiling:
                    raise BadInput(f"{where}: [{key}] {field} = {value!r} is beyond any path's rate "
                                   f"(at most {ceiling:g}); check its unit")
                if not number and not (isinstance(value, str) and value.strip()):
                    raise BadInput(f"{where}: [{key}] needs {field} = text"
                                   + (" (where the figure comes from)" if field == "source" else ""))
        # the source is echoed and stored: a password in it (a URL pasted as the figure's origin) never is
        labelled = [{**e, "source": redact(f"{USER_PEAKS_LABEL} {path}: {e['source']}"), "user": True}
                    for e in entries]
        out[key] = labelled[0] if key == "dram" else labelled
    return out


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


def nvlink_spec(gpu_name: str) -> dict | None:
    """The [[nvlink]] row of the GPU named `gpu_name` (NVML name): version, links per GPU,
    gbps_per_link (decimal GB/s per link and direction) and source; None if peaks.toml has none."""
    for entry in peak_data().get("nvlink", []):
        if entry["match"].lower() in gpu_name.lower():
            return entry
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
    spec = peak_data()["dram"]
    if spec.get("user"):  # the user's figure stands for what DMI hides (a VM) or gets wrong
        return Peak(float(spec["gbps"]), spec["source"]), None
    if dram.channels is None or dram.speed_mts is None:
        return None, f"DRAM peak unknown: {dram.reason or 'no DIMM facts'}"
    gbps = dram.channels * dram.speed_mts * 1e6 * spec["bytes_per_transfer"] / 1e9
    return Peak(gbps, f"{dram.channels} channels ({dram.modules} modules) x {dram.speed_mts} MT/s x 8 B; "
                      f"{spec['source']}"), None
