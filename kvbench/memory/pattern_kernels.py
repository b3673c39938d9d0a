"""The pattern's compiled kernels (numba), and the guard check's, apart so that importing
`kvbench.memory.pattern` for its constants does not pay numba's start-up: a `kvbench history` never
fills a byte."""

from __future__ import annotations

import numba
import numpy as np

from kvbench.memory.pattern import POISON

_GOLDEN = 0x9E3779B97F4A7C15
_POISON_WORD = np.uint64(POISON * 0x0101010101010101)  # eight poison bytes


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
    words = data[: data.shape[0] // 8 * 8].view(np.uint64)
    bad = np.full(starts.shape[0], -1, dtype=np.int64)
    for i in numba.prange(starts.shape[0]):
        s, e = starts[i], ends[i]
        a, b = min((s + 7) // 8, e // 8), e // 8  # whole words in [a, b); loose bytes around them
        middle = words[a:b]  # a slice, so the loop below vectorises (8 bytes at a time, no early exit)
        differs = np.uint64(0)
        for w in range(middle.shape[0]):
            differs |= middle[w] ^ _POISON_WORD
        loose = data[s:max(s, a * 8)]
        tail = data[max(s, b * 8):e]
        clean = differs == 0 and (loose == POISON).all() and (tail == POISON).all()
        if not clean:
            for j in range(s, e):
                if data[j] != POISON:
                    bad[i] = j
                    break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return bad[i]
    return -1
