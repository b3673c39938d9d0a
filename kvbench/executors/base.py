"""What an executor is: a named way to apply a descriptor list from one region to another."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

from kvbench.kv.descriptors import DescriptorList
from kvbench.memory.region import Region


class Executor(ABC):
    """Binds (source, destination, descriptors) once, then moves the bytes on every call.

    Binding does the expensive preparation (compiling, splitting, capturing a graph) so that
    the returned callable is exactly what a measurement times.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    # Which memory it moves, and so which code prepares its case: "host" (host to host), "cuda"
    # (pinned host to GPU), "nixl" (a file or another agent's memory to local memory).
    family: ClassVar[str] = "host"
    # Moves the same bytes as one piece (the descriptors collapsed): the ceiling the fragmented
    # strategies are judged against, not a way to restore fragmented KV.
    ceiling: ClassVar[bool] = False

    def unavailable_reason(self) -> str | None:
        """None when the executor can run here, else why not (one line)."""
        return None

    @abstractmethod
    def bind(self, src: Region, dst: Region, descriptors: DescriptorList, threads: int = 1) -> Callable[[], None]:
        """A callable that applies `descriptors` from `src` to `dst` once and returns when done."""
