"""`gpus=all` for the PCIe benchmarks: every GPU copies at once, one stream each.

Every GPU's stream is held behind a spin kernel and all are released together (nvbandwidth's
way); each GPU's copies are timed with events on its own stream, and the aggregate is all the
bytes over the slowest GPU's window. The NVML topology relation of every GPU pair is recorded,
so a shared uplink shows up as an aggregate below the sum of the singles — the seed's warning
about switches shared by GPUs and NICs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kvbench.backends.cuda import (
    cupy_module,
    free_pools,
    gpu_numa_node,
    link_probe,
    pci_bus_id,
)
from kvbench.benches.base import Prepared
from kvbench.errors import IntegrityError
from kvbench.hardware.gpu_link import nvml_handle
from kvbench.hardware.nvml import nvml_session
from kvbench.measure.cuda_timer import AllGpusEventTimer
from kvbench.measure.engine import Workload
from kvbench.memory.kinds import kind_unavailable_reason, parse_kind
from kvbench.memory.pattern import fill_pattern, poison_between_copies
from kvbench.memory.placement import numa_placement
from kvbench.memory.registered import host_buffer

H2D, D2H = 1, 2
# NVML's common-ancestor levels (nvmlGpuTopologyLevel_t), named as `nvidia-smi topo -m` explains them
TOPOLOGY_LEVELS = {
    "NVML_TOPOLOGY_INTERNAL": "same board",
    "NVML_TOPOLOGY_SINGLE": "single switch",
    "NVML_TOPOLOGY_MULTIPLE": "multiple switches",
    "NVML_TOPOLOGY_HOSTBRIDGE": "host bridge",
    "NVML_TOPOLOGY_NODE": "same NUMA node",
    "NVML_TOPOLOGY_SYSTEM": "across sockets",
}


def pair_relations(gpus: list[int], common_ancestor: Callable[[int, int], int],
                   levels: dict[int, str]) -> dict[str, str]:
    """{"0-1": "single switch", ...} for every pair of `gpus`, from NVML's answer for the pair
    (`common_ancestor(i, j)`, a level code named by `levels`); "unknown" where NVML refused."""
    out = {}
    for a, i in enumerate(gpus):
        for j in gpus[a + 1:]:
            try:
                level = int(common_ancestor(i, j))
            except Exception:
                out[f"{i}-{j}"] = "unknown"
                continue
            out[f"{i}-{j}"] = levels.get(level, f"level {level}")
    return out


def topology(gpus: list[int]) -> dict[str, str]:
    """NVML's common-ancestor relation of every pair of CUDA devices, {} without NVML."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return {}
        levels = {getattr(pynvml, name): text for name, text in TOPOLOGY_LEVELS.items() if hasattr(pynvml, name)}
        return pair_relations(gpus, lambda i, j: pynvml.nvmlDeviceGetTopologyCommonAncestor(
            nvml_handle(pynvml, pci_bus_id(i), i), nvml_handle(pynvml, pci_bus_id(j), j)), levels)


def lane_memory(gpu_node: int | None) -> str:
    """Each GPU copies from page-locked memory on its own NUMA node, as nvbandwidth places it (else
    half the GPUs of a two-socket box would read across the socket link, and the aggregate would
    measure that link); plain pinned memory where NVML does not know the GPU's node."""
    return "pinned" if gpu_node is None or kind_unavailable_reason(parse_kind(f"numa:{gpu_node}")) else f"numa:{gpu_node}"


def prepare_all(direction: str, size: int) -> Prepared:
    cp = cupy_module()
    gpus = list(range(cp.cuda.runtime.getDeviceCount()))
    kind = H2D if direction == "h2d" else D2H
    lanes = []
    for g in gpus:
        node = gpu_numa_node(g)
        with cp.cuda.Device(g):
            region, _registered = host_buffer(lane_memory(node), size)
            h = region.host_array
            fill_pattern(h, seed=g)
            d = cp.empty(size, dtype=cp.uint8)
            pattern = np.empty(size, dtype=np.uint8)
            fill_pattern(pattern, seed=100 + g)
            d.set(pattern)
            lanes.append({"gpu": g, "node": node, "region": region, "host": h, "dev": d, "pattern": pattern,
                          "stream": cp.cuda.Stream(non_blocking=True), "probe": link_probe(g)})

    def read_links() -> None:
        for lane in lanes:
            lane["probe"].read_under_load()

    timer = AllGpusEventTimer({lane["gpu"]: lane["stream"] for lane in lanes}, while_busy=read_links)

    def run() -> None:  # enqueues only: the timer (or verify's check) waits for the copies
        for lane in lanes:
            with cp.cuda.Device(lane["gpu"]):
                dst, src = ((lane["dev"].data.ptr, lane["host"].ctypes.data) if kind == H2D
                            else (lane["host"].ctypes.data, lane["dev"].data.ptr))
                cp.cuda.runtime.memcpyAsync(dst, src, size, kind, lane["stream"].ptr)

    def reset() -> None:
        for lane in lanes:
            poison_between_copies(lane["gpu"], lane["dev"] if kind == H2D else lane["host"])

    def check() -> None:
        for lane in lanes:
            with cp.cuda.Device(lane["gpu"]):
                lane["stream"].synchronize()
                ok = (np.array_equal(lane["dev"].get(), lane["host"]) if kind == H2D
                      else np.array_equal(lane["host"], lane["pattern"]))
            if not ok:
                raise IntegrityError(f"GPU {lane['gpu']}: copied bytes differ")

    def derive(m) -> dict[str, Any]:
        per_gpu = {str(gpu): size * m.loops / seconds / 1e9 for gpu, seconds in timer.last_gpu_s.items()}
        return {"per_gpu_gbps": per_gpu, "sum_of_gpus_gbps": sum(per_gpu.values()),
                "per_gpu_link": {str(lane["gpu"]): lane["probe"].facts() for lane in lanes}}

    metadata = {"gpus": gpus, "topology": topology(gpus), "timer": timer.name, "bytes_counted": "all GPUs together",
                "per_gpu_note": "each GPU's rate from its own stream's events in the last sample",
                "placement": "each GPU's host buffer page-locked on the GPU's own NUMA node (where NVML knows it)",
                "per_gpu_host": {str(lane["gpu"]): {**lane["region"].describe(),
                                                    **numa_placement(lane["node"], lane["region"].numa_node)}
                                 for lane in lanes}}

    def close() -> None:
        for lane in lanes:
            lane["stream"].synchronize()
            lane["probe"].close()
            lane["region"].close()
        lanes.clear()  # the buffers' last references, so the pools can hand their blocks back
        free_pools()

    return Prepared(Workload(size * len(gpus), run, reset, check, timer), metadata, close, derive)
