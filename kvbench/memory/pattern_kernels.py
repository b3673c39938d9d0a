"""The pattern's compiled kernels (numba), and the guard check's, apart so that importing
`kvbench.memory.pattern` for its constants does not pay numba's start-up: a `kvbench history` never
fills a byte."""

from __future__ import annotations

import numba
import numpy as np

from kvbench.memory.pattern import POISON

_GOLDEN = 0x9E3779B97F4A7C15


@numba.njit(nogil=True, inline="always")
def _mix(x):  # pragma: no cover - compiled: splitmix64's finalizer
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(nogil=True, inline="always")
def _word(index, key):  # pragma: no cover - compiled
    h = _mix(index * np.uint64(_GOLDEN) + key)
    for k in range(8):  # a byte that came out as the poison is flipped away from it
        shift = np.uint64(8 * k)
        if (h >> shift) & np.uint64(0xFF) == np.uint64(POISON):
            h ^= np.uint64(0x80) << shift
    return h


@numba.njit(nogil=True, parallel=True, cache=True)
def fill_words(words, first, key):  # pragma: no cover - compiled
    for i in numba.prange(words.shape[0]):
        words[i] = _word(np.uint64(first + i), key)


@numba.njit(nogil=True, cache=True)
def one_word(index, key):  # pragma: no cover - compiled
    return _word(np.uint64(index), key)


@numba.njit(nogil=True, parallel=True, cache=True)
def first_not_poison(data, starts, ends):  # pragma: no cover - compiled: the guard check (memory/guard.py)
    """Index of the first byte in the [starts[i], ends[i]) ranges of `data` that is not the poison, -1 if none."""
    bad = np.full(starts.shape[0], -1, dtype=np.int64)
    for i in numba.prange(starts.shape[0]):
        for j in range(starts[i], ends[i]):
            if data[j] != POISON:
                bad[i] = j
                break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return bad[i]
    return -1
