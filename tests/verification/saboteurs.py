"""Deliberate breakages of a transfer, put in at the seams where bytes move (an executor's bound
copy, a NIXL request) or at a workload's own reset and check, so that a test can prove a check
fails each of them. Each breakage runs the real transfer first, then spoils the destination the
way a buggy copy would."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

import numpy as np

from kvbench.memory.pattern import POISON

# A destination seen as (start, length) byte ranges, one per fragment, and a way to spoil bytes
# of it: spoil(start, length) writes the poison there, read(start, length) returns them.
Fragments = list[tuple[int, int]]


def spoil_first_bytes(fragments: Fragments, spoil) -> None:
    start = min(s for s, _ in fragments)
    spoil(start, 8)


def spoil_last_byte_of_each(fragments: Fragments, spoil) -> None:
    for start, length in fragments:
        spoil(start + length - 1, 1)


def spoil_one_fragment(fragments: Fragments, spoil) -> None:
    start, length = fragments[len(fragments) // 2]
    spoil(start, length)


def swap_two_fragments(fragments: Fragments, spoil, read=None, write=None) -> None:
    """Two fragments landed in each other's place (a misplaced copy)."""
    (a, n), (b, m) = fragments[0], fragments[-1]
    size = min(n, m)
    first, last = read(a, size), read(b, size)
    write(a, last)
    write(b, first)


OVERRUN = bytes([POISON ^ 0xFF])  # what a copy writes where it should not: anything but the poison


def write_one_byte_past_a_fragment(fragments: Fragments, spoil, read=None, write=None) -> None:
    """A fragment copied one byte too long, where no other fragment's copy would hide the byte: past
    the first fragment end (in address order) that no fragment continues."""
    starts = {s for s, _ in fragments}
    write(next(e for e in sorted(s + n for s, n in fragments) if e not in starts), OVERRUN)


def write_one_byte_before_a_fragment(fragments: Fragments, spoil, read=None, write=None) -> None:
    """A fragment copied from one byte early: before the first fragment that no fragment precedes."""
    ends = {s + n for s, n in fragments}
    write(next(s for s in sorted(s for s, _ in fragments) if s not in ends) - 1, OVERRUN)


def write_one_byte_between_fragments(fragments: Fragments, spoil, read=None, write=None) -> None:
    """A byte written in the middle of the widest gap between two fragments (an unselected pool slot)."""
    gaps = gaps_between(fragments)
    if gaps:  # none where the fragments cover the destination: nothing to break
        width, start = max(gaps)
        write(start + width // 2, OVERRUN)


def gaps_between(fragments: Fragments) -> list[tuple[int, int]]:
    """(width, start) of every gap between consecutive fragments in address order."""
    spans = sorted((s, s + n) for s, n in fragments)
    return [(b[0] - a[1], a[1]) for a, b in zip(spans, spans[1:], strict=False) if b[0] > a[1]]


# name → what happens after the real transfer (None: the transfer does not happen at all)
BREAKAGES: dict[str, Callable | None] = {
    "nothing written": None,
    "first bytes skipped": spoil_first_bytes,
    "last byte of each fragment skipped": spoil_last_byte_of_each,
    "one fragment skipped": spoil_one_fragment,
    "two fragments swapped": swap_two_fragments,
}
# Writes outside every fragment, which only a destination's guard bytes see (memory/guard.py): for
# destinations that have guards (kv, dram), not for buffers whose neighbours are someone else's memory.
GUARD_BREAKAGES: dict[str, Callable] = {
    "one byte written past a fragment": write_one_byte_past_a_fragment,
    "one byte written before a fragment": write_one_byte_before_a_fragment,
    "one byte written between fragments": write_one_byte_between_fragments,  # where the layout leaves gaps
}
NEEDS_READ_WRITE = (swap_two_fragments, *GUARD_BREAKAGES.values())


def break_after(breakage: str, transfer: Callable[[], None], fragments: Fragments, spoil, read, write) -> Callable[[], None]:
    """`transfer`, broken as `breakage` says."""
    after = {**BREAKAGES, **GUARD_BREAKAGES}[breakage]
    if after is None:
        return lambda: None

    def broken() -> None:
        transfer()
        if after in NEEDS_READ_WRITE:
            after(fragments, spoil, read, write)
        else:
            after(fragments, spoil)

    return broken


# --- destinations in this process's memory, by address -------------------------------------------

def memory_spoiler(base: int = 0):
    """(spoil, read, write) on this process's memory at `base` + offset."""
    def spoil(offset: int, length: int) -> None:
        ctypes.memset(base + offset, POISON, length)

    def read(offset: int, length: int) -> bytes:
        return ctypes.string_at(base + offset, length)

    def write(offset: int, data: bytes) -> None:
        ctypes.memmove(base + offset, data, len(data))

    return spoil, read, write


def array_spoiler(array: np.ndarray):
    return memory_spoiler(int(array.ctypes.data))


# --- destinations in files, by descriptor (offset, length, fd) ----------------------------------

def file_spoiler(fd: int):
    """(spoil, read, write) on the file behind `fd` (opened again without O_DIRECT)."""
    def _open():
        return os.open(f"/proc/self/fd/{fd}", os.O_RDWR)

    def spoil(offset: int, length: int) -> None:
        write(offset, bytes([POISON]) * length)

    def read(offset: int, length: int) -> bytes:
        handle = _open()
        try:
            return os.pread(handle, length, offset)
        finally:
            os.close(handle)

    def write(offset: int, data: bytes) -> None:
        handle = _open()
        try:
            os.pwrite(handle, data, offset)
            os.fsync(handle)
        finally:
            os.close(handle)

    return spoil, read, write
