"""Checking a restore: every descriptor's destination bytes equal its source bytes.

Written as a byte comparison loop, independent of the memcpy the executors use.
"""

from __future__ import annotations

import numpy as np

from kvbench.kv.descriptors import DescriptorList


def first_mismatch(descriptors: DescriptorList, src: np.ndarray, dst: np.ndarray,
                   unfilled: int | None = None) -> int | None:
    """Index of the first row whose destination differs from its source, None when all match.

    `unfilled`: a byte value no source byte may hold — the reset's poison, which the benchmarks write
    into a source before filling it with the pattern. A row whose source holds it fails too: its
    source was never filled, or a copy ran backwards over it, and equal bytes would prove nothing.
    """
    from kvbench.kv.check_kernels import first_bad_row  # numba: loaded when a restore is checked

    row = first_bad_row(src, dst, np.ascontiguousarray(descriptors.src_offset),
                        np.ascontiguousarray(descriptors.dst_offset), np.ascontiguousarray(descriptors.length),
                        -1 if unfilled is None else int(unfilled))
    return None if row < 0 else int(row)


def unfilled_note(descriptors: DescriptorList, src: np.ndarray, row: int, unfilled: int) -> str:
    """": its source holds the poison (…)" when row `row`'s source bytes hold `unfilled`, else "" (to say
    why the row failed)."""
    start, length = int(descriptors.src_offset[row]), int(descriptors.length[row])
    if (src[start:start + length] == unfilled).any():
        return ": its source holds the poison (the source was never filled, or a copy ran backwards over it)"
    return ""
