"""One GPU's PCIe link, clocks and replay counter through NVML, read around and during a case.

A GPU is named by its PCI bus id (what the caller's CUDA says it is: CUDA's device numbers follow
CUDA_VISIBLE_DEVICES, NVML's do not), with NVML's index as the fallback where the bus id is unknown.
"""

from __future__ import annotations

from typing import Any

from kvbench.hardware import optional
from kvbench.hardware.nvml import nvml_session


def nvml_handle(pynvml, bus_id: str | None, index: int = 0):
    """NVML's handle for the GPU at PCI `bus_id` (else NVML's device `index`)."""
    if bus_id:
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    return pynvml.nvmlDeviceGetHandleByIndex(index)


class LinkProbe:
    """One GPU's PCIe link, clocks and replay counter through NVML, held open for a case.

    A reading is cheap, so it can be taken while the GPU runs the copies of a sample (a link
    idles down outside P0): `read_under_load` is the CUDA event timer's `while_busy` hook. The
    replay counter is read when the case is prepared and again when it closes.
    """

    def __init__(self, bus_id: str | None, index: int = 0) -> None:
        self.before: dict[str, Any] = {}
        self.under_load: dict[str, Any] = {}
        self.after: dict[str, Any] = {}
        self.bus_id = bus_id  # which GPU this was, whatever CUDA_VISIBLE_DEVICES said
        self._nvml = self._handle = None
        try:
            pynvml = optional.load("pynvml")
            pynvml.nvmlInit()
        except Exception:
            return
        self._nvml = pynvml
        try:
            self._handle = nvml_handle(pynvml, bus_id, index)
        except Exception:
            self._handle = None
        self.before = self.read()

    def read(self) -> dict[str, Any]:
        """The link state now; {} without NVML."""
        nv, h = self._nvml, self._handle
        if nv is None or h is None:
            return {}

        def get(fn, *args):
            try:
                return fn(h, *args)
            except Exception:
                return None

        return {
            "gen": get(nv.nvmlDeviceGetCurrPcieLinkGeneration),
            "width": get(nv.nvmlDeviceGetCurrPcieLinkWidth),
            "max_gen": get(nv.nvmlDeviceGetMaxPcieLinkGeneration),
            "max_width": get(nv.nvmlDeviceGetMaxPcieLinkWidth),
            "replays": get(nv.nvmlDeviceGetPcieReplayCounter),
            "sm_clock_mhz": get(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_SM),
            "mem_clock_mhz": get(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_MEM),
        }

    def read_under_load(self) -> None:
        self.under_load = self.read()

    def close(self) -> None:
        """Read the state once more (the replay counter after the case), then let NVML go."""
        if self._nvml is None:
            return
        self.after = self.read()
        try:
            self._nvml.nvmlShutdown()
        finally:
            self._nvml = None

    def facts(self) -> dict[str, Any]:
        """What the result records; called from a case's `derive`, before `close`. Without a reading
        under load (copies timed on the host clock leave no moment to take one) the link is read
        now, right after the copies, and labelled so (`under_load: false`)."""
        if not self.under_load and not self.after and self._nvml is not None:
            self.after = self.read()
        facts = link_facts(self.before, self.under_load or self.after, self.after or self.under_load,
                           under_load=bool(self.under_load))
        return {**facts, "gpu_bus_id": self.bus_id} if self.bus_id else facts


def gpu_numa_node(bus_id: str | None, index: int = 0) -> int | None:
    """The NUMA node NVML says the GPU at `bus_id` is attached to, None when unknown."""
    with nvml_session() as pynvml:
        try:
            node = pynvml.nvmlDeviceGetNumaNodeId(nvml_handle(pynvml, bus_id, index)) if pynvml else None
        except Exception:
            return None
        return int(node) if node is not None and int(node) >= 0 else None


def link_facts(before: dict[str, Any], link: dict[str, Any], after: dict[str, Any],
               under_load: bool) -> dict[str, Any]:
    """What a GPU result records: the `link` and clocks (`under_load` says whether they were read
    while the copies ran, else right after), and the replay-counter delta across the case."""
    out: dict[str, Any] = {}
    if link.get("gen") is not None:
        out["link"] = {**{k: link[k] for k in ("gen", "width", "max_gen", "max_width")}, "under_load": under_load}
        out["clocks_mhz"] = {"sm": link.get("sm_clock_mhz"), "mem": link.get("mem_clock_mhz")}
    if before.get("replays") is not None and after.get("replays") is not None:
        out["pcie_replay_delta"] = after["replays"] - before["replays"]
    return out
