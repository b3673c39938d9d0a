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

    def unavailable_reason(self) -> str | None:
        """None when the executor can run here, else why not (one line)."""
        return None

    @abstractmethod
    def bind(self, src: Region, dst: Region, descriptors: DescriptorList, threads: int = 1) -> Callable[[], None]:
        """A callable that applies `descriptors` from `src` to `dst` once and returns when done."""
