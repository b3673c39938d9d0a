"""Frozen records of what a host is made of. Links: `gen` is the PCIe generation, `width` lanes."""

from __future__ import annotations

import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Link:
    """A PCIe link: current (as negotiated now) and max (what the device and slot can do)."""

    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None

    @property
    def downtrained(self) -> bool:
        """True when the link runs below its max speed or width (read it under load: links idle down)."""
        if None in (self.gen, self.width, self.max_gen, self.max_width):
            return False
        return self.gen < self.max_gen or self.width < self.max_width


@dataclass(frozen=True)
class PciDevice:
    bdf: str
    vendor: str
    device: str
    pci_class: str
    numa_node: int | None
    link: Link


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str
    bus_id: str
    numa_node: int | None
    link: Link
    memory_bytes: int | None
    bus_width_bits: int | None
    max_memory_clock_mhz: int | None
    pci_device_id: str | None = None
    cuda_index: int | None = None  # this GPU's CUDA device number here; None: hidden from CUDA, or no CUDA
    serial: str | None = None  # the board's serial number (NVML); None where NVML does not give it


@dataclass(frozen=True)
class Nic:
    name: str
    kind: str  # "infiniband" or "ethernet"
    bdf: str | None
    numa_node: int | None
    rate_gbit: float | None  # per port, as the driver reports (Gb/s, decimal)
    model: str | None = None
    virtual: bool = False  # an SR-IOV virtual function
    state: str | None = None  # "up" or "down" (operstate; an RDMA port's state), None where unreadable


@dataclass(frozen=True)
class Nvme:
    name: str
    model: str | None
    bdf: str | None
    numa_node: int | None


@dataclass(frozen=True)
class NumaNode:
    node: int
    memory_bytes: int | None
    cpus: str


@dataclass(frozen=True)
class Dram:
    """Populated memory modules as DMI reports them; None fields when unreadable. `channels` is the
    number of memory channels they populate (two modules on one channel share its bus), read from
    the modules' locators; None when the locators do not say (`reason` then says so)."""

    modules: int | None
    speed_mts: int | None
    total_bytes: int | None
    reason: str | None = None
    channels: int | None = None


@dataclass(frozen=True)
class HostFacts:
    hostname: str
    cpu_model: str
    sockets: int
    cores: int
    threads: int
    kernel: str
    numa: tuple[NumaNode, ...]
    pci: tuple[PciDevice, ...]
    gpus: tuple[Gpu, ...]
    nics: tuple[Nic, ...]
    nvme: tuple[Nvme, ...]
    dram: Dram
    gpu_reason: str | None = None
    extra: dict = field(default_factory=dict)
    system_id: str | None = None  # a hash of the DMI UUID / serial or machine-id (sysfs.system_identity)
    system_id_source: str | None = None
    pages: dict = field(default_factory=dict)  # THP mode and hugetlb pools (hardware/page_sizes.py); no part of the id

    def visible_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs this process's CUDA sees (CUDA_VISIBLE_DEVICES), in CUDA's order; every GPU, in
        NVML's order, where CUDA could not be asked."""
        seen = sorted((g for g in self.gpus if g.cuda_index is not None), key=lambda g: g.cuda_index)
        return tuple(seen) or self.gpus

    def gpu(self, number: int) -> Gpu | None:
        """The GPU that benchmarks call `gpu=number` (CUDA's numbering where known, else NVML's)."""
        return next((g for g in self.visible_gpus() if (g.index if g.cuda_index is None else g.cuda_index) == number),
                    None)

    def to_dict(self) -> dict:
        return asdict(self)


def _build(cls: type, data: Any) -> Any:
    """A facts record of `cls` from its `asdict` form; a field an older kvbench did not store is None
    (or its default)."""
    data = data if isinstance(data, dict) else {}
    hints = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):
        hint, given = hints[f.name], data.get(f.name, MISSING)
        if given is MISSING:
            values[f.name] = f.default if f.default is not MISSING else (
                f.default_factory() if f.default_factory is not MISSING else None)
        elif hint in _RECORDS.values():
            values[f.name] = _build(hint, given)
        elif typing.get_origin(hint) is tuple and typing.get_args(hint)[0] in _RECORDS.values():
            values[f.name] = tuple(_build(typing.get_args(hint)[0], item) for item in given or [])
        else:
            values[f.name] = given
    return cls(**values)


_RECORDS = {c.__name__: c for c in (Link, PciDevice, Gpu, Nic, Nvme, NumaNode, Dram)}


def host_facts_from_dict(data: dict[str, Any]) -> HostFacts:
    """HostFacts again from what a run stored (`HostFacts.to_dict()`): a stored run's peaks are taken
    on the facts it was measured on."""
    return _build(HostFacts, data)
