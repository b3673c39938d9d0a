"""The effects of kernels/*.cu written in numpy, read from the sources (TEST ONLY).

Each function takes the machine, the launch's grid and block sizes and its arguments as the kernel
receives them (pointers as ints, scalars as ints) and does to memory what the kernel does. A test
may break one (`machine.breakage[name] = "nothing" | "half"`) to show that a check catches it.
"""

from __future__ import annotations

import numpy as np

from gpu_standin.machine import CudaError, Machine, SpinOp

K1, K2, K3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
M32 = np.uint64(0xFFFFFFFF)


def _part(machine: Machine, name: str, n: int) -> int:
    """How many of `n` units the (possibly broken) kernel handles (past:N / before:N: all of them,
    then `Machine.spill` writes outside)."""
    how = machine.broken(name)
    return 0 if how == "nothing" else n // 2 if how == "half" else n


def hbm_read(machine: Machine, grid: int, block: int, src: int, n: int, partials: int) -> None:
    """Each block's sum of (2i + 1) * ((x + K1 y + K2 z + K3 w) | 1) over the vectors i its threads
    visit in the grid-stride loop (i mod stride in [b * block, (b + 1) * block)), in partials[b]."""
    out = machine.view(partials, grid * 8, "mapped").view(np.uint64)
    done = _part(machine, "hbm_read", n)
    source = machine.view(src, n * 16, "mapped")
    machine.touch(source[:16 * done], "read")
    machine.touch(out, "write")
    words = source.view(np.uint32).reshape(-1, 4)[:done].astype(np.uint64)
    with np.errstate(over="ignore"):
        g = ((words[:, 0] + words[:, 1] * np.uint64(K1) + words[:, 2] * np.uint64(K2)
              + words[:, 3] * np.uint64(K3)) & M32) | np.uint64(1)
        i = np.arange(done, dtype=np.uint64)
        terms = ((np.uint64(2) * i + np.uint64(1)) & M32) * g
        stride = grid * block
        padded = np.zeros(-(-done // stride) * stride if done else 0, dtype=np.uint64)
        padded[:done] = terms
        out[:] = padded.reshape(-1, grid, block).sum(axis=(0, 2), dtype=np.uint64) if done else 0


def hbm_write(machine: Machine, grid: int, block: int, dst: int, n: int, seed: int) -> None:
    """Vector i gets the words (4i + seed, +1, +2, +3) mod 2**32."""
    done = _part(machine, "hbm_write", n)
    words = machine.view(dst, n * 16, "mapped").view(np.uint32)[:4 * done]
    machine.touch(words, "write")
    words[:] = (np.arange(4 * done, dtype=np.uint64) + np.uint64(seed)).astype(np.uint32)
    machine.spill("hbm_write", dst, n * 16)


def vector_copy(machine: Machine, grid: int, block: int, src: int, dst: int, n: int) -> None:
    done = _part(machine, "vector_copy", n)
    source, target = machine.view(src, n * 16, "mapped")[:16 * done], machine.view(dst, n * 16, "mapped")[:16 * done]
    machine.touch(source, "read")
    machine.touch(target, "write")
    target[:] = source
    machine.spill("vector_copy", dst, n * 16)


def kv_gather(machine: Machine, grid: int, block: int, src: int, dst: int, src_off: int, dst_off: int,
              length: int, rows: int) -> None:
    """Row r: length[r] bytes from src + src_off[r] to dst + dst_off[r]."""
    so = machine.view(src_off, rows * 8, "mapped").view(np.uint64)
    do = machine.view(dst_off, rows * 8, "mapped").view(np.uint64)
    ln = machine.view(length, rows * 8, "mapped").view(np.uint64)
    for table in (so, do, ln):
        machine.touch(table, "read")
    for r in range(_part(machine, "kv_gather", rows)):
        size = int(ln[r])
        source, target = machine.view(src + int(so[r]), size, "mapped"), machine.view(dst + int(do[r]), size, "mapped")
        machine.touch(source, "read")
        machine.touch(target, "write")
        target[:] = source
        machine.spill("kv_gather", dst + int(do[r]), size)


KERNELS = {"hbm_read": hbm_read, "hbm_write": hbm_write, "vector_copy": vector_copy, "kv_gather": kv_gather}


def launch_op(machine: Machine, name: str, grid: int, block: int, args: list[int], device: int | None = None):
    """The queued operation for one launch of kernel `name` on `device`: memory of another GPU that
    device has not enabled peer access to is an illegal address, as on a GPU."""
    from gpu_standin.machine import Op

    if name == "spin_until":
        return SpinOp(machine.view(args[0], 8, "mapped").view(np.int32))
    if name not in KERNELS:
        raise CudaError(f"the stand-in has no numpy version of kernel {name}")
    kernel = KERNELS[name]

    def run() -> None:
        machine.counted(name)
        machine.kernel_device = device
        try:
            kernel(machine, grid, block, *args)
        finally:
            machine.kernel_device = None

    return Op(run, name)
