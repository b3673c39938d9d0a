"""Where a host buffer sits relative to the GPU it feeds (the seed: a far NUMA node can halve
bandwidth)."""

from __future__ import annotations

from typing import Any


def numa_placement(gpu_node: int | None, buffer_node: int | None) -> dict[str, Any]:
    """Where the host buffer sits relative to the GPU; a warning when it is on another node."""
    out: dict[str, Any] = {"gpu_numa_node": gpu_node, "host_numa_node": buffer_node}
    if gpu_node is not None and buffer_node is not None and gpu_node != buffer_node:
        out["far_numa"] = True
        out["warning"] = (f"host memory on NUMA node {buffer_node}, GPU attached to node {gpu_node}: "
                          "a far-node copy (the seed: can halve bandwidth)")
    return out
