"""NUMA placement through the Linux syscalls: bind pages with `mbind`, read them back with `move_pages`.

No libnuma needed: the syscall numbers are fixed per architecture.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

import numpy as np

_SYSCALLS = {
    "x86_64": {"mbind": 237, "move_pages": 279},
    "aarch64": {"mbind": 235, "move_pages": 239},
}
MPOL_BIND = 2
MPOL_MF_STRICT = 1
MPOL_MF_MOVE = 2

_libc = ctypes.CDLL(None, use_errno=True)


def online_nodes(sys_root: str = "/") -> list[int]:
    """NUMA node ids with memory on this host (a one-node host answers [0])."""
    base = Path(sys_root, "sys/devices/system/node")
    nodes = sorted(int(p.name[4:]) for p in base.glob("node[0-9]*")) if base.is_dir() else []
    return nodes or [0]


def node_free_bytes(node: int, sys_root: str = "/") -> int | None:
    """Free memory of `node` in bytes, from its meminfo; None if unreadable."""
    path = Path(sys_root, f"sys/devices/system/node/node{node}/meminfo")
    try:
        for line in path.read_text().splitlines():
            if "MemFree:" in line:
                return int(line.split()[-2]) * 1024
    except OSError:
        return None
    return None


def _syscall(name: str) -> int:
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        raise OSError(f"NUMA syscalls are not mapped for {platform.machine()}")
    return table[name]


def bind_to_node(address: int, size_bytes: int, node: int) -> None:
    """`mbind(MPOL_BIND)` the pages of [address, address+size) to `node`; they must not be touched yet."""
    mask_words = node // 64 + 1
    mask = (ctypes.c_ulong * mask_words)()
    mask[node // 64] = 1 << (node % 64)
    rc = _libc.syscall(
        _syscall("mbind"), ctypes.c_void_p(address), ctypes.c_ulong(size_bytes), ctypes.c_int(MPOL_BIND),
        mask, ctypes.c_ulong(mask_words * 64 + 1), ctypes.c_uint(MPOL_MF_STRICT | MPOL_MF_MOVE),
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mbind to NUMA node {node} failed: {os.strerror(err)}")


def page_nodes(address: int, size_bytes: int, max_pages: int = 1024) -> np.ndarray:
    """The NUMA node of up to `max_pages` pages spread over the range (`move_pages` query mode).

    Negative entries are errors for that page (e.g. -14 EFAULT: not faulted in yet).
    """
    page = os.sysconf("SC_PAGE_SIZE")
    count = max(1, min(max_pages, size_bytes // page))
    addrs = (np.linspace(0, size_bytes - page, count).astype(np.uint64) // page * page) + np.uint64(address)
    pages = (ctypes.c_void_p * count)(*[int(a) for a in addrs])
    status = (ctypes.c_int * count)()
    rc = _libc.syscall(_syscall("move_pages"), 0, ctypes.c_ulong(count), pages, None, status, 0)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"move_pages query failed: {os.strerror(err)}")
    return np.frombuffer(status, dtype=np.int32).copy()


def node_of(address: int, size_bytes: int) -> tuple[int | None, str | None]:
    """(the NUMA node most of the range's pages are on, None) or (None, why it is unknown).

    A query the kernel refuses is "node unknown", never an error: gVisor answers `move_pages` with
    EPERM or ENOSYS, and a buffer there is as usable as anywhere."""
    if size_bytes <= 0:
        return None, "empty buffer"
    try:
        nodes = page_nodes(address, size_bytes)
    except OSError as exc:
        return None, exc.strerror or str(exc)
    node = majority_node(nodes)
    return node, None if node is not None else "no page answered the move_pages query"


def majority_node(nodes: np.ndarray) -> int | None:
    """The node most sampled pages are on, or None when no page answered."""
    valid = nodes[nodes >= 0]
    if valid.size == 0:
        return None
    values, counts = np.unique(valid, return_counts=True)
    return int(values[np.argmax(counts)])
