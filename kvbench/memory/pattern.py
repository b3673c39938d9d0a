"""Fill patterns that make a misplaced or missing fragment visible."""

from __future__ import annotations

import numpy as np


def fill_pattern(array: np.ndarray, seed: int = 0) -> None:
    """Fill a uint8 array with distinct 8-byte words (index × odd constant + seed).

    Every aligned word differs from every other, so a fragment copied to the wrong offset,
    or not copied, changes the comparison.
    """
    words = array.size // 8
    if words:
        view = array[: words * 8].view(np.uint64)
        np.multiply(np.arange(words, dtype=np.uint64), np.uint64(0x9E3779B97F4A7C15), out=view)
        view += np.uint64(seed)
    tail = array[words * 8 :]
    tail[:] = np.arange(tail.size, dtype=np.uint8) + np.uint8(seed % 251 + 1)
