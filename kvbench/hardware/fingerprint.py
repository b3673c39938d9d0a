"""Collect a host's facts, its stable fingerprint (host id), its context and its current state."""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from kvbench.hardware import dimm, identity, nvml, page_sizes, sysfs
from kvbench.hardware.facts import HostFacts


def collect_facts(root: str = "/", gpus: bool = True, dram: bool = True,
                  cuda_index: Callable[[], dict[str, int]] | None = None) -> HostFacts:
    """Everything the hardware says about this host; `root` points at a recorded tree in tests.
    `cuda_index` answers CUDA's device number by PCI address (kvbench.run.this_host passes CUDA's)."""
    gpu_list, gpu_reason = nvml.read_gpus(cuda_index() if cuda_index else {}) if gpus else ((), "not read")
    system_id, system_id_source = sysfs.system_identity(root)
    return HostFacts(
        hostname=sysfs.hostname(),
        **sysfs.cpu_info(root),
        kernel=sysfs.kernel_release(),
        numa=sysfs.numa_nodes(root),
        pci=sysfs.pci_devices(root),
        gpus=gpu_list,
        nics=sysfs.nics(root),
        nvme=sysfs.nvme_devices(root),
        dram=dimm.read_dram() if dram else dimm.Dram(None, None, None, "not read"),
        gpu_reason=gpu_reason,
        system_id=system_id,
        system_id_source=system_id_source,
        pages=page_sizes.page_facts(root),
    )


def host_id(facts: HostFacts) -> str:
    """The box's stable id (hardware/identity.py), or KVBENCH_HOST_ID."""
    return identity.host_id(facts)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def context() -> dict:
    """What changes results without changing the box: kernel, driver, library versions, IOMMU."""
    ctx = {
        "kernel": platform.release(),
        "python": platform.python_version(),
        **{name: _version(name) for name in ("numpy", "numba", "cupy-cuda12x", "cupy-cuda13x", "torch",
                                              "nixl", "nixl-cu12", "nixl-cu13")},
        **nvml.driver_versions(),
        "iommu_groups": len(list(Path("/sys/kernel/iommu_groups").glob("*"))),
    }
    return {k: v for k, v in ctx.items() if v is not None}


def context_id(ctx: dict) -> str:
    return hashlib.sha256(json.dumps(ctx, sort_keys=True).encode()).hexdigest()


def system_state(facts: HostFacts, root: str = "/") -> dict:
    """Volatile state at the start of a run: current links, CPU governor, PCIe replay counters, the
    page sizes the kernel offers now (THP mode, hugetlb pools: root changes them between runs)."""
    governor = Path(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    return {
        "governor": governor.read_text().strip() if governor.exists() else None,
        "gpu_links": {g.bus_id: {"gen": g.link.gen, "width": g.link.width} for g in facts.gpus},
        "downtrained": [d.bdf for d in facts.pci if d.link.downtrained],
        "pcie_replays": nvml.replay_counters(),
        "pages": page_sizes.page_facts(root),
    }


def end_state() -> dict:
    """What a run records when it ends, to compare with its start: the PCIe replay counters."""
    return {"pcie_replays": nvml.replay_counters()}
