"""Checking a restore: every descriptor's destination bytes equal its source bytes.

Written as a byte comparison loop, independent of the memcpy the executors use.
"""

from __future__ import annotations

import numba
import numpy as np

from kvbench.kv.descriptors import DescriptorList


@numba.njit(nogil=True, parallel=True, cache=True)
def _first_bad_row(src, dst, src_off, dst_off, length):  # pragma: no cover - compiled
    bad = np.full(length.shape[0], -1, dtype=np.int64)
    for i in numba.prange(length.shape[0]):
        s, d = src_off[i], dst_off[i]
        for j in range(length[i]):
            if src[s + j] != dst[d + j]:
                bad[i] = j
                break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return i
    return -1


def first_mismatch(descriptors: DescriptorList, src: np.ndarray, dst: np.ndarray) -> int | None:
    """Index of the first row whose destination differs from its source, None when all match."""
    row = _first_bad_row(src, dst, np.ascontiguousarray(descriptors.src_offset),
                         np.ascontiguousarray(descriptors.dst_offset), np.ascontiguousarray(descriptors.length))
    return None if row < 0 else int(row)
