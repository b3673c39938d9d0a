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


def link_facts(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The `link` (read right after the last sample, i.e. under load) and the replay delta."""
    out: dict[str, Any] = {}
    if after.get("gen") is not None:
        out["link"] = {k: after[k] for k in ("gen", "width", "max_gen", "max_width")}
        out["clocks_mhz"] = {"sm": after.get("sm_clock_mhz"), "mem": after.get("mem_clock_mhz")}
    if before.get("replays") is not None and after.get("replays") is not None:
        out["pcie_replay_delta"] = after["replays"] - before["replays"]
    return out
