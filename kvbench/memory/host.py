"""Host memory: pageable buffers and buffers bound to a NUMA node.

Both come from anonymous `mmap` of the case's page size (`memory.pages`: base pages, THP or a
hugetlb pool; page-aligned, so pages can be bound before first touch), are touched before they are
handed out, so page faults are never measured, and record how much of them huge pages back.
"""

from __future__ import annotations

from kvbench.errors import BadInput
from kvbench.memory import numa, pages
from kvbench.memory.headroom import HostMemory, growable_memory, growth_ceiling, host_headroom, meminfo
from kvbench.memory.region import Region


def check_fits(size_bytes: int, kind: str, room: HostMemory | None = None) -> None:
    """Refuse, before allocating, a buffer that would not fit in 90 % of the memory free for it
    (`room`; by default what the host can give now: see `headroom.host_headroom`)."""
    pages.check_pool(size_bytes, kind)  # a case on hugetlb pages: the pool holds all of its buffers, or it is skipped
    measured = room is None
    room = room or host_headroom()
    if room.available_bytes is None or size_bytes <= 0.9 * room.available_bytes:
        return
    grows = growable_memory() if measured else None
    ceiling = growth_ceiling() if grows else None
    if grows and ceiling is not None and size_bytes > 0.9 * ceiling:
        # no growth could hold it: refused at once, instead of touching most of the box's memory first
        raise BadInput(f"buffer of {size_bytes} bytes for '{kind}' is larger than 90% of the {room.available_bytes} "
                       f"bytes free there ({room.basis}), and than 90% of the {ceiling} bytes this VM's memory "
                       f"could grow to ({grows}); choose a smaller size")
    if grows:  # a VM whose memory grows as it is used: touch what the kernel calls free once, then read again
        free_now = meminfo().get("MemAvailable") or 0  # never more: touching must not itself run the box dry
        _touch(min(int(0.9 * room.available_bytes), int(0.9 * free_now), size_bytes))
        room = host_headroom()
        if room.available_bytes is None or size_bytes <= 0.9 * room.available_bytes:
            return
    raise BadInput(
        f"buffer of {size_bytes} bytes for '{kind}' is larger than 90% of the "
        f"{room.available_bytes} bytes free there ({room.basis}); choose a smaller size"
        + (f", or retry: this VM's memory can still grow as it is used ({grows}), and was touched once "
           "without growing enough" if grows else "")
    )


def _touch(size_bytes: int) -> None:
    """Write one byte of every page of `size_bytes` of fresh memory, then free it: a balloon deflates
    or hotplugged memory comes online as a guest's memory is used."""
    import mmap

    import numpy as np

    if size_bytes <= 0:
        return
    try:
        mapping = mmap.mmap(-1, size_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:  # not even that could be mapped: the refusal that follows says so
        return
    try:
        np.frombuffer(mapping, dtype=np.uint8)[::mmap.PAGESIZE] = 1
    finally:
        mapping.close()


def _mapping(size_bytes: int) -> pages.HostMapping:
    """An untouched mapping of the page size the case asked for (`pages.asked`)."""
    return pages.HostMapping(size_bytes, pages.asked())


def _region(kind: str, size_bytes: int, mapping: pages.HostMapping) -> Region:
    array = mapping.array
    try:
        array.fill(0)  # first touch: fault every page in now, not inside a timed copy
        node, unknown = numa.node_of(int(array.ctypes.data), size_bytes) if size_bytes else (None, None)
        backing = mapping.backing()
    except BaseException:
        mapping.close()
        raise
    facts = {**({"numa_unknown": unknown} if unknown else {}), **backing}
    region = Region(kind=kind, size_bytes=size_bytes, host_array=array, numa_node=node, _release=mapping.close,
                    facts=facts)
    pages.list_buffer(region.describe())
    return region


def pageable_buffer(size_bytes: int) -> Region:
    """Ordinary pageable host memory wherever the kernel puts it; the node found is recorded."""
    check_fits(size_bytes, "pageable")
    return _region("pageable", size_bytes, _mapping(size_bytes))


def numa_buffer(size_bytes: int, node: int) -> Region:
    """Host memory bound to NUMA `node` with mbind; the placement is verified page by page."""
    nodes = numa.online_nodes()
    if node not in nodes:
        raise BadInput(f"bad memory 'numa:{node}': this host has NUMA nodes {nodes}")
    node_free, host = numa.node_free_bytes(node), host_headroom()
    if node_free is not None and (host.available_bytes is None or node_free < host.available_bytes):
        host = HostMemory(node_free, f"NUMA node {node} MemFree")
    check_fits(size_bytes, f"numa:{node}", host)
    mapping = _mapping(size_bytes)
    try:
        numa.bind_to_node(mapping.address, mapping.length, node)
    except BaseException:
        mapping.close()
        raise
    region = _region(f"numa:{node}", size_bytes, mapping)
    if region.numa_node is not None and region.numa_node != node:  # unknown (query refused): mbind's word stands
        region.close()
        raise RuntimeError(f"pages bound to NUMA node {node} were found on node {region.numa_node}")
    return region
