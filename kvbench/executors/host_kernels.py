"""The host executor's compiled row loops (numba), apart so that the benchmark registry loads without
paying numba's start-up: a command that only reads the database never compiles a loop."""

from __future__ import annotations

import ctypes

import numba

_libc = ctypes.CDLL(None)
_memcpy = _libc.memcpy
# Pointers travel as size_t: same registers in the x86-64 and AArch64 ABIs, and numba
# passes unsigned integers straight through where it would not convert to void*.
_memcpy.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t]
_memcpy.restype = ctypes.c_size_t


@numba.njit(nogil=True)
def copy_rows_serial(dst_addr, src_addr, src_off, dst_off, length):  # pragma: no cover - compiled
    for i in range(length.shape[0]):
        _memcpy(dst_addr + dst_off[i], src_addr + src_off[i], length[i])


@numba.njit(nogil=True, parallel=True)
def copy_rows_parallel(dst_addr, src_addr, src_off, dst_off, length):  # pragma: no cover - compiled
    for i in numba.prange(length.shape[0]):
        _memcpy(dst_addr + dst_off[i], src_addr + src_off[i], length[i])
