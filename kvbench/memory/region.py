"""A region: bytes of one memory kind, with what is known about where they live."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class Region:
    """`size_bytes` of memory of `kind` (`pageable`, `numa:1`, `pinned`, `device:0`, ...).

    `host_array` is a uint8 view for host-addressable memory, None otherwise; `device_array`
    the GPU array (cupy) for device memory; `numa_node` is
    the node the pages were *verified* to be on (None when not known).
    """

    kind: str
    size_bytes: int
    host_array: np.ndarray | None
    numa_node: int | None = None
    device_array: object | None = None
    facts: dict = field(default_factory=dict)
    _release: Callable[[], None] | None = None

    @property
    def address(self) -> int:
        if self.host_array is None:
            raise TypeError(f"region of kind {self.kind} has no host address")
        return int(self.host_array.ctypes.data)

    def poison(self) -> None:
        """Write the reset poison into every byte (`memory.pattern.POISON`, which no pattern byte
        holds); returns when it is there (a GPU buffer's fill is waited for: see
        `poison_between_copies`)."""
        if self.host_array is not None:
            from kvbench.memory.pattern import poison

            poison(self.host_array)
        elif self.device_array is not None:
            from kvbench.memory.pattern import poison_between_copies

            poison_between_copies(int(self.facts.get("gpu", 0)), self.device_array)

    def release_first(self, step: Callable[[], None]) -> None:
        """Run `step` when the region closes, before its memory is freed (cudaHostUnregister)."""
        inner = self._release

        def release() -> None:
            try:
                step()
            finally:
                if inner is not None:
                    inner()

        self._release = release

    def describe(self) -> dict:
        """What a result records about this buffer."""
        return {"kind": self.kind, "size_bytes": self.size_bytes, "numa_node": self.numa_node, **self.facts}

    def close(self) -> None:
        self.host_array = None
        self.device_array = None
        if self._release is not None:
            release, self._release = self._release, None
            release()

    def __enter__(self) -> Region:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
