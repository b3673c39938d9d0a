"""Checking a restore: every descriptor's destination bytes equal its source bytes.

Written as a byte comparison loop, independent of the memcpy the executors use.
"""

from __future__ import annotations

import numpy as np

from kvbench.kv.descriptors import DescriptorList


def first_mismatch(descriptors: DescriptorList, src: np.ndarray, dst: np.ndarray) -> int | None:
    """Index of the first row whose destination differs from its source, None when all match."""
    from kvbench.kv.check_kernels import first_bad_row  # numba: loaded when a restore is checked

    row = first_bad_row(src, dst, np.ascontiguousarray(descriptors.src_offset),
                         np.ascontiguousarray(descriptors.dst_offset), np.ascontiguousarray(descriptors.length))
    return None if row < 0 else int(row)
