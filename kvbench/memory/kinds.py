"""Memory kinds by name (`pageable`, `numa:N`, `pinned`, `device`), with availability on this host and
their allocators (the names alone, and parsing them: `kind_names.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvbench.backends.cuda import cuda_unavailable_reason
from kvbench.errors import BadInput
from kvbench.memory import host, numa
from kvbench.memory.kind_names import MemoryKind, parse_kind
from kvbench.memory.region import Region


@dataclass(frozen=True)
class KindInfo:
    name: str
    description: str
    unavailable_reason: Callable[[], str | None]
    allocate: Callable[[int, int | None], Region]


def _cuda_only(kind: str) -> Callable[[int, int | None], Region]:
    def allocate(size_bytes: int, index: int | None) -> Region:
        from kvbench.memory import cuda_memory

        return cuda_memory.allocate(kind, size_bytes, index)

    return allocate


_KINDS = {
    "pageable": KindInfo("pageable", "ordinary host memory, touched before timing",
                         lambda: None, lambda size, _i: host.pageable_buffer(size)),
    "numa": KindInfo("numa", "host memory bound to NUMA node N with mbind (numa:N)",
                     lambda: None, lambda size, i: host.numa_buffer(size, i)),
    "pinned": KindInfo("pinned", "page-locked host memory (cudaHostAlloc)",
                       cuda_unavailable_reason, _cuda_only("pinned")),
    "device": KindInfo("device", "GPU memory (HBM), device:N for GPU N",
                       cuda_unavailable_reason, _cuda_only("device")),
    "file": KindInfo("file", "a file read through NIXL (kv.restore src=file; storage.* make their own)",
                     lambda: None, lambda size, _i: _not_allocatable("file")),
    "remote": KindInfo("remote", "another NIXL agent's memory (kv.restore src=remote)",
                       lambda: None, lambda size, _i: _not_allocatable("remote")),
}


def _not_allocatable(kind: str) -> Region:
    raise BadInput(f"memory '{kind}' is a tier NIXL reaches, not a buffer to allocate: use it as kv.restore src")


def memory_kinds() -> dict[str, KindInfo]:
    return dict(_KINDS)


def kind_unavailable_reason(kind: MemoryKind) -> str | None:
    """Why `kind` cannot be allocated here (None when it can)."""
    reason = _KINDS[kind.name].unavailable_reason()
    if reason:
        return reason
    if kind.name == "numa" and kind.index not in numa.online_nodes():
        return f"NUMA node {kind.index} does not exist (nodes: {numa.online_nodes()})"
    return None


def allocate(kind: MemoryKind | str, size_bytes: int) -> Region:
    """A region of `size_bytes` of `kind`, ready to use (touched, placed, verified)."""
    kind = parse_kind(kind) if isinstance(kind, str) else kind
    reason = _KINDS[kind.name].unavailable_reason()
    if reason:
        raise BadInput(f"memory '{kind}' is unavailable: {reason}")
    return _KINDS[kind.name].allocate(size_bytes, kind.index)
