"""How NIXL sees a region: its memory type (DRAM or VRAM), base address and device id."""

from __future__ import annotations

from kvbench.memory.region import Region


def nixl_memory(region: Region) -> tuple[str, int, int]:
    """(mem type, base address, device id) of a host or GPU region."""
    if region.device_array is not None:
        return "VRAM", int(region.device_array.data.ptr), int(region.facts.get("gpu", 0))
    return "DRAM", region.address, 0
