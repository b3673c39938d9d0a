"""Fill patterns that make a misplaced, missing or stale byte visible, and the poison that resets
write.

Every byte of the pattern depends on its position and on the seed (a splitmix64 hash of the
8-byte word's index and the seed), and no byte of it ever equals `POISON`, the value resets
write. So a copy that skips any byte — the first one, the last one of a fragment, a whole
descriptor — leaves poison where the pattern belongs, and a byte copied to the wrong place
carries the wrong word's hash.
"""

from __future__ import annotations

import numba
import numpy as np

POISON = 0xA5  # what a reset writes into every destination byte; the pattern never holds it
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
def _fill_words(words, first, key):  # pragma: no cover - compiled
    for i in numba.prange(words.shape[0]):
        words[i] = _word(np.uint64(first + i), key)


@numba.njit(nogil=True, cache=True)
def _one_word(index, key):  # pragma: no cover - compiled
    return _word(np.uint64(index), key)


def _key(seed: int) -> np.uint64:
    return np.uint64((seed * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)


def fill_pattern(array: np.ndarray, seed: int = 0, offset: int = 0) -> None:
    """Fill a uint8 array with the pattern for `seed`, as if it started at byte `offset` of a
    larger patterned buffer (`offset` a multiple of 8): any slice of a buffer can be rebuilt."""
    if offset % 8:
        raise ValueError(f"offset {offset} must be a multiple of 8")
    key = _key(seed)
    words = array.size // 8
    first = offset // 8
    if words:
        _fill_words(array[: words * 8].view(np.uint64), first, key)
    tail = array.size - words * 8
    if tail:
        last = np.array([_one_word(first + words, key)], dtype=np.uint64).view(np.uint8)
        array[words * 8:] = last[:tail]


def pattern_bytes(size: int, seed: int = 0, offset: int = 0) -> np.ndarray:
    """A new array of `size` pattern bytes (see `fill_pattern`)."""
    out = np.empty(size, dtype=np.uint8)
    fill_pattern(out, seed, offset)
    return out


def poison(array) -> None:
    """Write `POISON` into every byte of `array` (numpy, or cupy on its current device's stream)."""
    array.fill(POISON)
