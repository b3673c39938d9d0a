"""Host memory: pageable buffers and buffers bound to a NUMA node.

Both come from anonymous `mmap` (page-aligned, so pages can be bound before first touch) and
are touched before they are handed out, so page faults are never measured.
"""

from __future__ import annotations

import mmap

import numpy as np

from kvbench.errors import BadInput
from kvbench.memory import numa
from kvbench.memory.headroom import HostMemory, host_headroom
from kvbench.memory.region import Region


def check_fits(size_bytes: int, kind: str, room: HostMemory | None = None) -> None:
    """Refuse, before allocating, a buffer that would not fit in 90 % of the memory free for it
    (`room`; by default what the host can give now: see `headroom.host_headroom`)."""
    room = room or host_headroom()
    if room.available_bytes is not None and size_bytes > 0.9 * room.available_bytes:
        raise BadInput(
            f"buffer of {size_bytes} bytes for '{kind}' is larger than 90% of the "
            f"{room.available_bytes} bytes free there ({room.basis}); choose a smaller size"
        )


def _mapping(size_bytes: int) -> tuple[mmap.mmap, np.ndarray]:
    mapping = mmap.mmap(-1, max(size_bytes, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return mapping, np.frombuffer(mapping, dtype=np.uint8, count=size_bytes)


def _region(kind: str, size_bytes: int, mapping: mmap.mmap, array: np.ndarray) -> Region:
    array.fill(0)  # first touch: fault every page in now, not inside a timed copy
    node, unknown = numa.node_of(int(array.ctypes.data), size_bytes) if size_bytes else (None, None)

    def release() -> None:
        try:
            mapping.close()
        except BufferError:
            pass  # a view is still alive somewhere; the mapping goes when it does

    return Region(kind=kind, size_bytes=size_bytes, host_array=array, numa_node=node, _release=release,
                  facts={"numa_unknown": unknown} if unknown else {})


def pageable_buffer(size_bytes: int) -> Region:
    """Ordinary pageable host memory wherever the kernel puts it; the node found is recorded."""
    check_fits(size_bytes, "pageable")
    mapping, array = _mapping(size_bytes)
    return _region("pageable", size_bytes, mapping, array)


def numa_buffer(size_bytes: int, node: int) -> Region:
    """Host memory bound to NUMA `node` with mbind; the placement is verified page by page."""
    nodes = numa.online_nodes()
    if node not in nodes:
        raise BadInput(f"bad memory 'numa:{node}': this host has NUMA nodes {nodes}")
    node_free, host = numa.node_free_bytes(node), host_headroom()
    if node_free is not None and (host.available_bytes is None or node_free < host.available_bytes):
        host = HostMemory(node_free, f"NUMA node {node} MemFree")
    check_fits(size_bytes, f"numa:{node}", host)
    mapping, array = _mapping(size_bytes)
    numa.bind_to_node(int(array.ctypes.data), size_bytes, node)
    region = _region(f"numa:{node}", size_bytes, mapping, array)
    if region.numa_node is not None and region.numa_node != node:  # unknown (query refused): mbind's word stands
        region.close()
        raise RuntimeError(f"pages bound to NUMA node {node} were found on node {region.numa_node}")
    return region
