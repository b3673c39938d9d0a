"""What the GPU benchmarks share: availability, GPU checks before allocating, and the link
state and replay counter read around a measurement (NVML)."""

from __future__ import annotations

from typing import Any

from kvbench.backends.cuda import cuda_unavailable_reason
from kvbench.errors import BadInput


def check_gpu(gpu: int, size_bytes: int, name: str = "gpu") -> None:
    """BadInput for a GPU index that does not exist or a buffer above 90 % of its free memory.

    Checked only where CUDA works; elsewhere the case is skipped with the driver's reason.
    """
    if cuda_unavailable_reason():
        return
    from kvbench.backends.cuda import cupy_module

    cp = cupy_module()
    count = cp.cuda.runtime.getDeviceCount()
    if gpu >= count:
        raise BadInput(f"bad {name}={gpu}: this host has GPUs 0..{count - 1}")
    with cp.cuda.Device(gpu):
        free, _total = cp.cuda.runtime.memGetInfo()
    if size_bytes > 0.9 * free:
        raise BadInput(f"bad size: {size_bytes} bytes on GPU {gpu} exceed 90% of its {free} free bytes")


def link_state(gpu: int) -> dict[str, Any]:
    """Current and max PCIe gen/width and the replay counter of GPU `gpu` (NVML), {} without it."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(gpu)

        def read(fn, *args):
            try:
                return fn(h, *args)
            except Exception:
                return None

        return {
            "gen": read(pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
            "width": read(pynvml.nvmlDeviceGetCurrPcieLinkWidth),
            "max_gen": read(pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
            "max_width": read(pynvml.nvmlDeviceGetMaxPcieLinkWidth),
            "replays": read(pynvml.nvmlDeviceGetPcieReplayCounter),
            "sm_clock_mhz": read(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": read(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
        }
    finally:
        pynvml.nvmlShutdown()


def gpu_numa_node(gpu: int) -> int | None:
    """The NUMA node NVML says GPU `gpu` is attached to, None when unknown."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        node = pynvml.nvmlDeviceGetNumaNodeId(pynvml.nvmlDeviceGetHandleByIndex(gpu))
        return int(node) if node is not None and int(node) >= 0 else None
    except Exception:
        return None
    finally:
        pynvml.nvmlShutdown()


def numa_placement(gpu_node: int | None, buffer_node: int | None) -> dict[str, Any]:
    """Where the host buffer sits relative to the GPU; a warning when it is on another node."""
    out: dict[str, Any] = {"gpu_numa_node": gpu_node, "host_numa_node": buffer_node}
    if gpu_node is not None and buffer_node is not None and gpu_node != buffer_node:
        out["far_numa"] = True
        out["warning"] = (f"host memory on NUMA node {buffer_node}, GPU attached to node {gpu_node}: "
                          "a far-node copy (the seed: can halve bandwidth)")
    return out


def link_facts(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The `link` (read right after the last sample, i.e. under load) and the replay delta."""
    out: dict[str, Any] = {}
    if after.get("gen") is not None:
        out["link"] = {k: after[k] for k in ("gen", "width", "max_gen", "max_width")}
        out["clocks_mhz"] = {"sm": after.get("sm_clock_mhz"), "mem": after.get("mem_clock_mhz")}
    if before.get("replays") is not None and after.get("replays") is not None:
        out["pcie_replay_delta"] = after["replays"] - before["replays"]
    return out
