"""`hbm.read`, `hbm.write`, `hbm.copy`: GPU memory bandwidth with the kernels in kernels/hbm.cu.

Buffers are at least 8 × the L2 (1 GiB minimum) and the L2 is flushed before every sample
(triton's way: write a buffer twice its size). `hbm.copy` counts bytes once, as nvbandwidth
does, and records the read + write traffic separately.
"""

from __future__ import annotations

import functools
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.cuda import (
    cuda_unavailable_reason,
    cupy_module,
    kernel_module,
    launch_shape,
    link_probe,
)
from kvbench.benches.base import Benchmark, Prepared, built_in_stack, prepared_on_gpu
from kvbench.benches.declared import HBM
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.path import Segment
from kvbench.measure.cuda_timer import CudaEventTimer
from kvbench.measure.engine import Workload
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.guard import GUARD_BYTES
from kvbench.memory.pattern import POISON, poison_between_copies

# hbm_write's 32-bit words count up from SEED: the reset poison's word (0xA5A5A5A5) is the one value
# they reach last, after 2**32 words, so no buffer under 16 GiB ever holds it where the pattern belongs.
POISON_WORD = 0xA5A5A5A5
SEED = POISON_WORD + 1
MAX_BYTES = (1 << 34) - 16
CHECK_CHUNK = 64 << 20  # bytes compared at a time, so a check needs no second full-size buffer
READ_K = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D)  # kernels/hbm.cu's K1, K2, K3


def buffer_bytes(requested: int, gpu: int) -> int:
    """`requested`, or (0) max(8 × L2, 1 GiB); a multiple of 16 bytes either way."""
    if requested:
        return requested // 16 * 16
    cp = cupy_module()
    l2 = cp.cuda.runtime.getDeviceProperties(gpu)["l2CacheSize"]
    return max(8 * l2, 1 << 30) // 16 * 16


def chunks(size: int, step: int = CHECK_CHUNK) -> list[tuple[int, int]]:
    """[lo, hi) byte ranges of at most `step` bytes covering `size` (`step` a multiple of 16)."""
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def write_pattern(xp, lo: int, hi: int, seed: int):
    """The 32-bit words hbm_write leaves in bytes [lo, hi): word j holds (j + seed) mod 2**32.

    `xp` is numpy or cupy; computed in 64 bits and wrapped, as the kernel's 32-bit arithmetic does.
    """
    return (xp.arange(lo // 4, hi // 4, dtype=xp.uint64) + xp.uint64(seed)).astype(xp.uint32)


def read_checksum(words, first_vector: int = 0) -> int:
    """hbm_read's checksum of 16-byte vectors given as 32-bit words (numpy, n x 4 or flat), the first
    being vector `first_vector`: the sum mod 2**64 of (2i + 1) * ((x + K1 y + K2 z + K3 w) | 1), in
    the kernel's own arithmetic (32-bit wraps, a 32 x 32 -> 64-bit product)."""
    v = np.asarray(words, dtype=np.uint32).reshape(-1, 4).astype(np.uint64)
    k1, k2, k3 = (np.uint64(k) for k in READ_K)
    g = ((v[:, 0] + v[:, 1] * k1 + v[:, 2] * k2 + v[:, 3] * k3) & np.uint64(0xFFFFFFFF)) | np.uint64(1)
    i = np.arange(first_vector, first_vector + len(v), dtype=np.uint64)
    h = (np.uint64(2) * i + np.uint64(1)) & np.uint64(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        return int(np.sum(h * g, dtype=np.uint64))


@functools.cache
def expected_read_checksum(size: int, seed: int = SEED) -> int:
    """What hbm_read must sum over a buffer of `size` bytes that hbm_write filled with `seed`."""
    total = 0
    for lo, hi in chunks(size):
        total = (total + read_checksum(write_pattern(np, lo, hi, seed), lo // 16)) % (1 << 64)
    return total


class _Hbm(Benchmark):
    kind: str  # read | write | copy
    params = HBM  # kvbench/benches/declared.py

    def unavailable_reason(self) -> str | None:
        return cuda_unavailable_reason()

    def validate(self, params: dict[str, Any]) -> None:
        if params["size"] > MAX_BYTES:
            raise BadInput(f"bad size={params['size']}: HBM buffers are at most 16 GiB (the pattern's 32-bit words "
                           "would wrap onto the reset poison)")
        check_gpu(params["gpu"], (2 if self.kind == "copy" else 1) * (params["size"] or (1 << 30)))

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return [("hbm_copy" if self.kind == "copy" else "hbm", params["gpu"])]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        return prepared_on_gpu(params["gpu"], lambda: self._build(params))

    def _build(self, params: dict[str, Any]) -> Prepared:
        return built_in_stack(lambda stack: self._build_in(params, stack))

    def _build_in(self, params: dict[str, Any], stack: ExitStack) -> Prepared:
        cp = cupy_module()
        gpu = params["gpu"]
        probe = link_probe(gpu)
        stack.callback(probe.close)
        size = buffer_bytes(params["size"], gpu)
        n16 = size // 16
        module = kernel_module("hbm", gpu)
        read, write, copy = (module.get_function(k) for k in ("hbm_read", "hbm_write", "vector_copy"))
        grid, block = launch_shape(gpu)
        stream = cp.cuda.Stream(non_blocking=True)
        l2 = cp.cuda.runtime.getDeviceProperties(gpu)["l2CacheSize"]
        scrub = cp.empty(max(2 * l2, 1 << 20), dtype=cp.uint8)
        src = cp.empty(size, dtype=cp.uint8) if self.kind in ("read", "copy") else None
        # the destination with guards on both sides: a kernel that writes outside its bytes fails the check
        whole = cp.empty(size + 2 * GUARD_BYTES, dtype=cp.uint8) if self.kind in ("write", "copy") else None
        dst = whole[GUARD_BYTES:GUARD_BYTES + size] if whole is not None else None
        partials = cp.empty(grid, dtype=cp.uint64)  # hbm_read: each block's checksum, every timed launch
        want_checksum = expected_read_checksum(size) if self.kind == "read" else None
        if src is not None:
            write((grid,), (block,), (src, cp.uint64(n16), cp.uint32(SEED)))
        stack.callback(stream.synchronize)  # nothing in flight when the buffers go
        cp.cuda.Device(gpu).synchronize()

        def flush() -> None:
            cp.cuda.runtime.memsetAsync(scrub.data.ptr, 1, scrub.nbytes, stream.ptr)

        timer = CudaEventTimer(stream, gpu, flush=flush, while_busy=probe.read_under_load)
        args = {
            "read": (read, (src, cp.uint64(n16), partials)),
            "write": (write, (dst, cp.uint64(n16), cp.uint32(SEED))),
            "copy": (copy, (src, dst, cp.uint64(n16))),
        }
        kernel, kernel_args = args[self.kind]

        def run() -> None:
            kernel((grid,), (block,), kernel_args, stream=stream)

        def reset() -> None:  # the read's destination is its checksum: poisoned like any other
            poison_between_copies(gpu, whole if whole is not None else partials)

        def check() -> None:
            stream.synchronize()
            if self.kind == "read":
                got = int(np.sum(partials.get(), dtype=np.uint64))
                if got != want_checksum:
                    raise IntegrityError(f"hbm_read's checksum {got:#x} is not the pattern's {want_checksum:#x}: "
                                         "a vector was skipped, read twice or read from the wrong place")
                return
            guards = np.concatenate([whole[:GUARD_BYTES].get(), whole[GUARD_BYTES + size:].get()])
            if int(np.count_nonzero(guards != POISON)):
                raise IntegrityError(f"{'hbm_write' if self.kind == 'write' else 'vector_copy'} wrote outside its "
                                     f"{size} bytes: {int(np.count_nonzero(guards != POISON))} guard bytes around the "
                                     f"destination are no longer the poison {POISON:#04x}")
            for lo, hi in chunks(size):  # write and copy both leave the pattern hbm_write makes
                if not bool(cp.array_equal(dst[lo:hi].view(cp.uint32), write_pattern(cp, lo, hi, SEED))):
                    raise IntegrityError(f"{'hbm_write' if self.kind == 'write' else 'vector_copy'} left words that "
                                         f"differ from the pattern in bytes {lo}..{hi}")

        def derive(m) -> dict[str, Any]:
            facts = probe.facts()
            if self.kind == "copy":
                facts["traffic_gbps"] = 2 * size / m.summary.median / 1e9  # read + write
            return facts

        metadata = {"buffer_bytes": size, "l2_bytes": l2, "launch": {"grid": grid, "block": block},
                    "bytes_counted": "once" if self.kind == "copy" else "moved"}
        if size < 4 * l2:
            metadata["warning"] = (f"buffer of {size} bytes is under 4 x the {l2}-byte L2: "
                                   "much of this is the cache's bandwidth, not HBM's")

        return Prepared(Workload(size, run, reset, check, timer), metadata, derive=derive)


@register
class HbmRead(_Hbm):
    id = "hbm.read"
    description = "GPU reads its own HBM (16-byte vector loads)"
    kind = "read"


@register
class HbmWrite(_Hbm):
    id = "hbm.write"
    description = "GPU writes its own HBM (16-byte vector stores)"
    kind = "write"


@register
class HbmCopy(_Hbm):
    id = "hbm.copy"
    description = "GPU copies HBM to HBM (bytes counted once; traffic = 2x recorded)"
    kind = "copy"
