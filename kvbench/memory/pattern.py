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

from kvbench.memory.poison import POISON  # what a reset writes into every destination byte; the pattern never holds it


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


def poison_between_copies(gpu: int, *arrays) -> None:
    """Fill `arrays` (cupy or numpy) with the reset poison (`POISON`) with nothing in
    flight on GPU `gpu` before or after.

    cupy fills on the legacy default stream, which the cases' non-blocking streams do not wait
    for: a fill still running when the next copy starts would race with it (and with the timed
    window). Waiting before keeps the last copy from landing after the fill.
    """
    from kvbench.backends.cuda import cupy_module

    cp = cupy_module()
    device = cp.cuda.Device(gpu)
    with device:
        device.synchronize()
        for array in arrays:
            poison(array)
        device.synchronize()


def first_difference(got: np.ndarray, expected: np.ndarray) -> int | None:
    """The index of the first byte where two contiguous uint8 arrays of one length differ, None when
    every byte is equal (compiled, eight bytes at a time: a 256 MiB check without numpy's 256 MiB of
    booleans)."""
    from kvbench.memory.pattern_kernels import first_difference as kernel

    if got.shape != expected.shape:
        raise ValueError(f"{got.size} bytes compared with {expected.size}")
    bad = int(kernel(_bytes(got), _bytes(expected)))
    return None if bad < 0 else bad


def first_poison_byte(array: np.ndarray) -> int | None:
    """The index of the first byte of a contiguous uint8 array that holds `POISON`, None when none does."""
    from kvbench.memory.pattern_kernels import first_poison

    bad = int(first_poison(_bytes(array)))
    return None if bad < 0 else bad


def _bytes(array: np.ndarray) -> np.ndarray:
    """`array` as one flat run of uint8 (a copy only where it is not contiguous)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)
