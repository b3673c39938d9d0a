"""Checking a restore: every descriptor's destination bytes equal its source bytes.

Written as a comparison loop of its own (eight bytes at a time where a row is word-aligned, byte by byte
to name the first bad row), independent of the memcpy the executors use.
"""

from __future__ import annotations

import numpy as np

from kvbench.kv.descriptors import DescriptorList

PIECE_BYTES = 16 << 20  # a row longer than this is checked in pieces of it, in parallel


def first_mismatch(descriptors: DescriptorList, src: np.ndarray, dst: np.ndarray,
                   unfilled: int | None = None) -> int | None:
    """Index of the first row whose destination differs from its source, None when all match.

    `unfilled`: a byte value no source byte may hold — the reset's poison, which the benchmarks write
    into a source before filling it with the pattern. A row whose source holds it fails too: its
    source was never filled, or a copy ran backwards over it, and equal bytes would prove nothing.
    """
    return _first_bad(src, dst, descriptors.src_offset, descriptors.dst_offset, descriptors.length,
                      -1 if unfilled is None else int(unfilled))


def _first_bad(src: np.ndarray, dst: np.ndarray, src_off: np.ndarray, dst_off: np.ndarray, length: np.ndarray,
               unfilled: int) -> int | None:
    """The compiled check over rows; a row longer than PIECE_BYTES (a contiguous copy is one row of the
    whole buffer) goes in pieces, so that the loop's threads share it; pieces keep their rows' order."""
    from kvbench.kv.check_kernels import first_bad_row  # numba: loaded when a restore is checked

    src_off, dst_off, length = (np.ascontiguousarray(a, dtype=np.int64) for a in (src_off, dst_off, length))
    owner = None
    if length.size and int(length.max()) > PIECE_BYTES:
        pieces = -(-length // PIECE_BYTES)
        owner = np.repeat(np.arange(length.size), pieces)
        start = (np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)) * PIECE_BYTES
        src_off, dst_off = src_off[owner] + start, dst_off[owner] + start
        length = np.minimum(length[owner] - start, PIECE_BYTES)
    row = first_bad_row(src, dst, src_off, dst_off, length, unfilled)
    if row < 0:
        return None
    return int(owner[row]) if owner is not None else int(row)


def unfilled_note(descriptors: DescriptorList, src: np.ndarray, row: int, unfilled: int) -> str:
    """": its source holds the poison (…)" when row `row`'s source bytes hold `unfilled`, else "" (to say
    why the row failed)."""
    one = slice(row, row + 1)  # the row against itself: only a byte that is `unfilled` can fail it
    if _first_bad(src, src, descriptors.src_offset[one], descriptors.src_offset[one], descriptors.length[one],
                  int(unfilled)) is not None:
        return ": its source holds the poison (the source was never filled, or a copy ran backwards over it)"
    return ""
