"""The restore check's compiled comparison loop (numba), apart so that importing the benchmarks does
not pay numba's start-up."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, parallel=True, cache=True)
def first_bad_row(src, dst, src_off, dst_off, length, unfilled):  # pragma: no cover - compiled
    """First row whose destination differs from its source, or whose source holds `unfilled` (-1: none)."""
    bad = np.full(length.shape[0], -1, dtype=np.int64)
    for i in numba.prange(length.shape[0]):
        s, d = src_off[i], dst_off[i]
        for j in range(length[i]):
            if src[s + j] != dst[d + j] or src[s + j] == unfilled:
                bad[i] = j
                break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return i
    return -1
