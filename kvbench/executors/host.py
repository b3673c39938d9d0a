"""Host executors: the numba reference (`host`) and a numpy one (`host-numpy`).

`host` is the reference every other executor is checked against: a compiled loop over the
descriptors that calls libc `memcpy` for each row, parallel over rows, with the GIL released.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kvbench.errors import BadInput
from kvbench.executors.base import Executor
from kvbench.executors.registry import register
from kvbench.kv.descriptors import DescriptorList
from kvbench.memory.region import Region

# glibc switches to non-temporal stores for very large copies; on the machines seen so far
# memcpy in 256 KiB pieces beat one whole-buffer memcpy by 15-20 % (see crosscheck dram).
PIECE_BYTES = 256 << 10


def _host_arrays(src: Region, dst: Region, executor: str) -> tuple[np.ndarray, np.ndarray]:
    for region in (src, dst):
        if region.host_array is None:
            raise BadInput(f"executor '{executor}' moves host memory only; '{region.kind}' is not host memory")
    return src.host_array, dst.host_array


def max_threads() -> int:
    """Threads numba may use in this process (NUMBA_NUM_THREADS, by default the CPU count)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def check_threads(threads: int) -> None:
    if threads < 1 or threads > max_threads():
        raise BadInput(f"bad threads={threads}: this host runs 1 to {max_threads()} copy threads")


@register
class HostExecutor(Executor):
    name = "host"
    description = "numba loop calling memcpy per descriptor, parallel over descriptors (the reference)"

    def __init__(self, block_bytes: int = 0) -> None:
        self.block_bytes = block_bytes

    def bind(self, src: Region, dst: Region, descriptors: DescriptorList, threads: int = 1) -> Callable[[], None]:
        src_arr, dst_arr = _host_arrays(src, dst, self.name)
        check_threads(threads)
        descriptors.validate(src.size_bytes, dst.size_bytes)
        rows = descriptors.split(self.block_bytes).split_even(threads)
        src_off = np.ascontiguousarray(rows.src_offset)
        dst_off = np.ascontiguousarray(rows.dst_offset)
        length = np.ascontiguousarray(rows.length)
        import numba

        from kvbench.executors.host_kernels import copy_rows_parallel, copy_rows_serial

        src_addr = np.uint64(src_arr.ctypes.data)
        dst_addr = np.uint64(dst_arr.ctypes.data)
        if threads == 1:
            def run() -> None:
                copy_rows_serial(dst_addr, src_addr, src_off, dst_off, length)
        else:
            def run() -> None:
                numba.set_num_threads(threads)
                copy_rows_parallel(dst_addr, src_addr, src_off, dst_off, length)
        return run


@functools.cache
def _copy_pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count for the whole process: binding a case must not leak threads."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kvbench-copy")


@register
class NumpyExecutor(Executor):
    name = "host-numpy"
    description = "numpy copyto per descriptor, submitted from Python (threads split the rows)"

    def bind(self, src: Region, dst: Region, descriptors: DescriptorList, threads: int = 1) -> Callable[[], None]:
        src_arr, dst_arr = _host_arrays(src, dst, self.name)
        check_threads(threads)
        descriptors.validate(src.size_bytes, dst.size_bytes)
        rows = descriptors.split_even(threads).rows.tolist()
        views = [(dst_arr[d : d + n], src_arr[s : s + n]) for s, d, n in rows]

        def copy_group(group: list[tuple[np.ndarray, np.ndarray]]) -> None:
            for d, s in group:
                np.copyto(d, s)

        if threads == 1:
            return lambda: copy_group(views)
        groups = [views[i::threads] for i in range(threads)]
        pool = _copy_pool(threads)

        def run() -> None:
            for future in [pool.submit(copy_group, g) for g in groups]:
                future.result()

        return run


@register
class ContiguousExecutor(HostExecutor):
    name = "contiguous"
    description = "the same bytes as one copy, in the host's fastest piece size: the ceiling on host memory"
    ceiling = True

    def __init__(self) -> None:
        super().__init__(PIECE_BYTES)
