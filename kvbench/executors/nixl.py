"""`nixl`: fragments moved by NIXL requests from a tier NIXL reaches — a file (POSIX backend) or
another agent's memory (UCX) — into local memory, all from the same descriptor list as every
other strategy (its source offsets address the file or the peer's buffer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvbench.backends.nixl import DEFAULT_TIMEOUT_S, PreparedTransfer, desc_array, nixl_unavailable_reason
from kvbench.executors.base import Executor
from kvbench.executors.registry import register
from kvbench.kv.descriptors import DescriptorList
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.region import Region

REQUEST_ROWS = 8192  # descriptors per NIXL request; larger restores post several
IN_FLIGHT = 4  # requests posted before waiting: the POSIX plugin holds 65,536 I/Os at most


@dataclass(frozen=True)
class NixlSource:
    """Where the fragments come from: `agent` (this side's, with the destination registered),
    the remote side's `mem_type` and agent name (this agent's own for a file), the `backends` to
    use, `rows(descriptors)` → the remote (address or file offset, length, device or fd) rows, and
    `timeout_s`: how long a request may stay unfinished before it fails (a peer's: the case's
    `timeout_s`, as net.read and net.write wait)."""

    agent: object
    mem_type: str
    remote_agent: str
    backends: tuple[str, ...]
    rows: Callable[[DescriptorList], np.ndarray]
    timeout_s: float = DEFAULT_TIMEOUT_S
    peer: object = None  # the far side, where the pool is another agent's (peers/initiator.py)


class NixlRun:
    """One restore as prepared NIXL requests; calling it posts them, `IN_FLIGHT` at a time."""

    def __init__(self, transfers: list[PreparedTransfer]) -> None:
        self.transfers = transfers

    def __call__(self) -> None:
        for start in range(0, len(self.transfers), IN_FLIGHT):
            window = self.transfers[start:start + IN_FLIGHT]
            for t in window:
                t.post()
            for t in window:
                t.wait()

    @property
    def backend(self) -> str:
        return self.transfers[0].backend

    def telemetry(self) -> dict[str, float] | None:
        return self.transfers[0].telemetry()

    def close(self) -> None:
        for t in self.transfers:
            t.release()


@register
class NixlExecutor(Executor):
    name = "nixl"
    family = "nixl"
    description = "NIXL requests of up to 8,192 fragments, 4 in flight: POSIX from a file, UCX from another agent"

    def unavailable_reason(self) -> str | None:
        return nixl_unavailable_reason()

    def bind(self, src: NixlSource, dst: Region, descriptors: DescriptorList, threads: int = 1) -> NixlRun:
        mem_type, base, device = nixl_memory(dst)
        local = desc_array(base + descriptors.dst_offset, descriptors.length, device)
        remote = src.rows(descriptors)
        transfers: list[PreparedTransfer] = []
        try:
            for start in range(0, len(descriptors), REQUEST_ROWS):
                part = slice(start, start + REQUEST_ROWS)
                transfers.append(PreparedTransfer(src.agent, "READ", local[part], mem_type, remote[part], src.mem_type,
                                                  src.remote_agent, list(src.backends), timeout_s=src.timeout_s))
        except BaseException:
            NixlRun(transfers).close()
            raise
        return NixlRun(transfers)
