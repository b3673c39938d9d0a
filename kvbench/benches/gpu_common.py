"""What the GPU benchmarks share: availability, GPU checks before allocating, and the link
state and replay counter read around a measurement (NVML)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module, make_current
from kvbench.benches.base import Prepared
from kvbench.errors import BadInput
from kvbench.hardware.nvml import nvml_session
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.region import Region


def prepared_on_gpu(gpu: int, build: Callable[[], Prepared]) -> Prepared:
    """`build()` with GPU `gpu` current, which stays current until the case closes (see
    `make_current`); the previous device comes back then, or at once if `build` fails."""
    restore = make_current(gpu)
    try:
        prepared = build()
    except BaseException:
        restore()
        raise
    inner_close = prepared.close

    def close() -> None:
        try:
            inner_close()
        finally:
            restore()

    return replace(prepared, close=close)


# cudaHostRegisterPortable | cudaHostRegisterMapped: usable from every GPU, and by kernels
REGISTER_FLAGS = 1 | 2


def host_buffer(memory: str, size: int) -> tuple[Region, bool]:
    """(region, registered): `pinned` (cudaHostAlloc), `pageable`, or `numa:N` page-locked in place
    with cudaHostRegister (portable, mapped); closing the region unregisters it."""
    cp = cupy_module()
    region = allocate(memory, size)
    if parse_kind(memory).name != "numa":
        return region, False
    try:
        cp.cuda.runtime.hostRegister(region.address, size, REGISTER_FLAGS)
    except BaseException:
        region.close()
        raise
    address = region.address
    region.release_first(lambda: cp.cuda.runtime.hostUnregister(address))
    return region, True


def check_gpu(gpu: int, size_bytes: int, given: str | None = None) -> None:
    """BadInput for a GPU index that does not exist or a buffer above 90 % of its free memory;
    `given` is the input the index came from as the user wrote it (default `gpu=N`; `dst=device:3`).

    Checked only where CUDA works; elsewhere the case is skipped with the driver's reason.
    """
    if cuda_unavailable_reason():
        return
    cp = cupy_module()
    count = cp.cuda.runtime.getDeviceCount()
    if gpu >= count:
        raise BadInput(f"bad {given or f'gpu={gpu}'}: this host has GPUs 0..{count - 1}")
    with cp.cuda.Device(gpu):
        free, _total = cp.cuda.runtime.memGetInfo()
    if size_bytes > 0.9 * free:
        raise BadInput(f"bad size: {size_bytes} bytes on GPU {gpu} exceed 90% of its {free} free bytes")


def nvml_handle(pynvml, gpu: int):
    """NVML's handle for CUDA device `gpu`, found by PCI bus id: NVML numbers GPUs in bus order and
    ignores CUDA_VISIBLE_DEVICES, so CUDA's index is not NVML's."""
    from kvbench.backends.cuda import pci_bus_id

    bus_id = pci_bus_id(gpu)
    if bus_id:
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    return pynvml.nvmlDeviceGetHandleByIndex(gpu)


class LinkProbe:
    """One GPU's PCIe link, clocks and replay counter through NVML, held open for a case.

    A reading is cheap, so it can be taken while the GPU runs the copies of a sample (a link
    idles down outside P0): `read_under_load` is the CUDA event timer's `while_busy` hook. The
    replay counter is read when the case is prepared and again when it closes.
    """

    def __init__(self, gpu: int) -> None:
        self.before: dict[str, Any] = {}
        self.under_load: dict[str, Any] = {}
        self.after: dict[str, Any] = {}
        from kvbench.backends.cuda import pci_bus_id

        self.bus_id = pci_bus_id(gpu)  # which GPU this was, whatever CUDA_VISIBLE_DEVICES said
        self._nvml = self._handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:
            return
        self._nvml = pynvml
        try:
            self._handle = nvml_handle(pynvml, gpu)
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
        facts = link_facts(self.before, self.under_load or self.after, self.after or self.under_load,
                           under_load=bool(self.under_load))
        return {**facts, "gpu_bus_id": self.bus_id} if self.bus_id else facts


def gpu_numa_node(gpu: int) -> int | None:
    """The NUMA node NVML says GPU `gpu` is attached to, None when unknown."""
    with nvml_session() as pynvml:
        try:
            node = pynvml.nvmlDeviceGetNumaNodeId(nvml_handle(pynvml, gpu)) if pynvml else None
        except Exception:
            return None
        return int(node) if node is not None and int(node) >= 0 else None


def numa_placement(gpu_node: int | None, buffer_node: int | None) -> dict[str, Any]:
    """Where the host buffer sits relative to the GPU; a warning when it is on another node."""
    out: dict[str, Any] = {"gpu_numa_node": gpu_node, "host_numa_node": buffer_node}
    if gpu_node is not None and buffer_node is not None and gpu_node != buffer_node:
        out["far_numa"] = True
        out["warning"] = (f"host memory on NUMA node {buffer_node}, GPU attached to node {gpu_node}: "
                          "a far-node copy (the seed: can halve bandwidth)")
    return out


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
