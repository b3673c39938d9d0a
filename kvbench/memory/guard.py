"""Guard bytes: poison around a destination and wherever in it no fragment writes, checked unchanged.

A check that compares only the bytes inside the descriptors passes a copy that also writes outside
them: a fragment copied one byte too long (or starting one byte early), an offload that spills into a
pool slot the case did not select. Serving engines' swap-blocks tests compare the whole cache, not
only the blocks they moved; kvbench does the same cheaply: the destination is allocated with
`GUARD_BYTES` of guard on each side, the reset poisons all of it, and after the transfer every byte
that no fragment writes — the two margins and every unselected slot or gap inside — must still hold
the poison (`memory.pattern.POISON`, which no pattern byte ever is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvbench.errors import IntegrityError
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import POISON
from kvbench.memory.region import Region

GUARD_BYTES = 4096  # on each side: one page, so the destination between keeps its pages' alignment
CHECK_PIECE = 16 << 20  # bytes of guard one thread checks at a time


class GuardedRegion:
    """`size_bytes` of memory `kind` for an executor to write (`region`), with guards around it.

    `offsets` and `lengths` (bytes, in `region`'s coordinates) are what the case's fragments write;
    every other byte of `region` is a guard too. None: the fragments cover all of `region`. A second
    transfer into the same buffer that writes other bytes (a paired ceiling) checks its own
    `guards(offsets, lengths)`.
    """

    def __init__(self, kind: str, size_bytes: int, offsets: np.ndarray | None = None,
                 lengths: np.ndarray | None = None) -> None:
        self.size_bytes = size_bytes
        self.whole = allocate(kind, size_bytes + 2 * GUARD_BYTES)
        inner = slice(GUARD_BYTES, GUARD_BYTES + size_bytes)
        w = self.whole
        self.region = Region(w.kind, size_bytes, None if w.host_array is None else w.host_array[inner],
                             numa_node=w.numa_node, facts=w.facts,
                             device_array=None if w.device_array is None else w.device_array[inner])
        self.default = self.guards(offsets, lengths)
        self.poison()  # guards hold the poison from the start, whatever a workload's reset does later

    def guards(self, offsets: np.ndarray | None = None, lengths: np.ndarray | None = None) -> Guards:
        """The guard ranges of this buffer when the fragments write `offsets`/`lengths` (None: all of it)."""
        if offsets is None:
            offsets, lengths = np.zeros(1, dtype=np.int64), np.array([self.size_bytes], dtype=np.int64)
        return Guards(self.size_bytes, *_unwritten(self.size_bytes, np.asarray(offsets, dtype=np.int64),
                                                   np.asarray(lengths, dtype=np.int64)))

    @property
    def guard_bytes(self) -> int:
        """How many bytes the case's check finds unchanged (the margins and every byte no fragment writes)."""
        return self.default.guard_bytes

    def poison(self) -> None:
        """The reset: poison into every byte, the guards' included (returns when it is there)."""
        self.whole.poison()

    def host_bytes(self) -> np.ndarray:
        """The whole buffer as host bytes, guards included (GPU memory is copied: call it once per check)."""
        if self.whole.host_array is not None:
            return self.whole.host_array
        return self.whole.device_array.get()

    @staticmethod
    def inner(whole: np.ndarray) -> np.ndarray:
        """The executor's bytes within `host_bytes()`."""
        return whole[GUARD_BYTES:len(whole) - GUARD_BYTES]

    def check(self, whole: np.ndarray | None = None, guards: Guards | None = None) -> None:
        """Raise `IntegrityError` naming the first guard byte (of `guards`, by default the case's) that
        is no longer the poison; `whole`: the buffer's `host_bytes()` if the caller has them."""
        (guards or self.default).check(self.host_bytes() if whole is None else whole)

    def close(self) -> None:
        self.region.close()  # the view first: the mapping behind it can then go with the whole buffer
        self.whole.close()

    def __enter__(self) -> GuardedRegion:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Guards:
    """[starts, ends) byte ranges of a guarded buffer (margins included) that must hold the poison."""

    size_bytes: int  # the destination between the margins
    starts: np.ndarray
    ends: np.ndarray

    @property
    def guard_bytes(self) -> int:
        return int((self.ends - self.starts).sum())

    def check(self, data: np.ndarray) -> None:
        """Raise `IntegrityError` naming the first byte of the ranges in `data` that is not the poison."""
        from kvbench.memory.pattern_kernels import first_not_poison  # numba: loaded when bytes are checked

        at = int(first_not_poison(data, self.starts, self.ends))
        if at < 0:
            return
        where = at - GUARD_BYTES
        if where < 0:
            place = f"the guard {-where} byte(s) before the destination"
        elif where >= self.size_bytes:
            place = f"the guard {where - self.size_bytes + 1} byte(s) past the destination's end"
        else:
            place = f"destination byte {where}, which no fragment writes (a slot or gap the case did not select)"
        raise IntegrityError(f"a byte outside every fragment was written: {place} holds {int(data[at]):#04x}, "
                             f"not the poison {POISON:#04x}")


def _unwritten(size_bytes: int, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) ranges of the guarded buffer (margins included) that no fragment writes."""
    order = np.argsort(offsets, kind="stable")
    begin = offsets[order] + GUARD_BYTES
    end = begin + lengths[order]
    starts = np.concatenate(([0], end))
    ends = np.concatenate((begin, [size_bytes + 2 * GUARD_BYTES]))
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    # Long ranges (an offload's unselected slots) cut into pieces, so the check's threads share them.
    pieces = (ends - starts + CHECK_PIECE - 1) // CHECK_PIECE
    row = np.repeat(np.arange(len(starts)), pieces)
    k = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_starts = starts[row] + k * CHECK_PIECE
    return np.ascontiguousarray(piece_starts), np.ascontiguousarray(np.minimum(piece_starts + CHECK_PIECE, ends[row]))
