"""The restore check's compiled comparison loop (numba), apart so that importing the benchmarks does
not pay numba's start-up."""

from __future__ import annotations

import numba
import numpy as np

_LOW = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)


@numba.njit(nogil=True, parallel=True, cache=True)
def first_bad_row(src, dst, src_off, dst_off, length, unfilled):  # pragma: no cover - compiled
    """First row whose destination differs from its source, or whose source holds `unfilled` (-1: none).

    A row whose offsets are whole words is compared eight bytes at a time first, with no early exit so
    the loop vectorises (a word holds `unfilled` when word ^ unfilled×8 has a zero byte, which
    (x - 0x01…01) & ~x & 0x80…80 tells exactly); only a row that fails that, or one that is not
    word-aligned, is scanned byte by byte for the verdict."""
    bad = np.full(length.shape[0], -1, dtype=np.int64)
    check_unfilled = unfilled >= 0
    unfilled_word = np.uint64(unfilled & 0xFF) * _LOW if check_unfilled else np.uint64(0)
    for i in numba.prange(length.shape[0]):
        s, d, n = src_off[i], dst_off[i], length[i]
        clean = False
        if s % 8 == 0 and d % 8 == 0:
            words = n // 8
            sw = src[s:s + words * 8].view(np.uint64)
            dw = dst[d:d + words * 8].view(np.uint64)
            differs = np.uint64(0)
            hit = np.uint64(0)
            for k in range(words):
                differs |= sw[k] ^ dw[k]
                v = sw[k] ^ unfilled_word
                hit |= (v - _LOW) & ~v & _HIGH
            clean = differs == 0 and (not check_unfilled or hit == 0)
            if clean:
                for j in range(words * 8, n):
                    if src[s + j] != dst[d + j] or src[s + j] == unfilled:
                        clean = False
                        break
        if not clean:
            for j in range(n):
                if src[s + j] != dst[d + j] or src[s + j] == unfilled:
                    bad[i] = j
                    break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return i
    return -1
