"""Fill patterns that make a misplaced, missing or stale byte visible, and the poison that resets
write.

Every byte of the pattern depends on its position and on the seed (a splitmix64 hash of the
8-byte word's index and the seed), and no byte of it ever equals `POISON`, the value resets
write. So a copy that skips any byte — the first one, the last one of a fragment, a whole
descriptor — leaves poison where the pattern belongs, and a byte copied to the wrong place
carries the wrong word's hash.
"""

from __future__ import annotations

import numpy as np

POISON = 0xA5  # what a reset writes into every destination byte; the pattern never holds it


def _key(seed: int) -> np.uint64:
    return np.uint64((seed * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)


def fill_pattern(array: np.ndarray, seed: int = 0, offset: int = 0) -> None:
    """Fill a uint8 array with the pattern for `seed`, as if it started at byte `offset` of a
    larger patterned buffer (`offset` a multiple of 8): any slice of a buffer can be rebuilt."""
    if offset % 8:
        raise ValueError(f"offset {offset} must be a multiple of 8")
    from kvbench.memory.pattern_kernels import fill_words, one_word  # numba: loaded when bytes are made

    key = _key(seed)
    words = array.size // 8
    first = offset // 8
    if words:
        fill_words(array[: words * 8].view(np.uint64), first, key)
    tail = array.size - words * 8
    if tail:
        last = np.array([one_word(first + words, key)], dtype=np.uint64).view(np.uint8)
        array[words * 8:] = last[:tail]


def pattern_bytes(size: int, seed: int = 0, offset: int = 0) -> np.ndarray:
    """A new array of `size` pattern bytes (see `fill_pattern`)."""
    out = np.empty(size, dtype=np.uint8)
    fill_pattern(out, seed, offset)
    return out


def poison(array) -> None:
    """Write `POISON` into every byte of `array` (numpy, or cupy on its current device's stream)."""
    array.fill(POISON)
