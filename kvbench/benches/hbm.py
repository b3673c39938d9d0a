"""`hbm.read`, `hbm.write`, `hbm.copy`: GPU memory bandwidth with the kernels in kernels/hbm.cu.

Buffers are at least 8 × the L2 (1 GiB minimum) and the L2 is flushed before every sample
(triton's way: write a buffer twice its size). `hbm.copy` counts bytes once, as nvbandwidth
does, and records the read + write traffic separately.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.backends.cuda import CudaEventTimer, cuda_unavailable_reason, cupy_module, kernel_module, launch_shape
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.gpu_common import LinkProbe, check_gpu, prepared_on_gpu
from kvbench.benches.params import Param
from kvbench.benches.registry import register
from kvbench.errors import IntegrityError
from kvbench.hardware.path import Segment
from kvbench.measure.engine import Workload

SEED = 0x5EED


def buffer_bytes(requested: int, gpu: int) -> int:
    """`requested`, or (0) max(8 × L2, 1 GiB); a multiple of 16 bytes either way."""
    if requested:
        return requested // 16 * 16
    cp = cupy_module()
    l2 = cp.cuda.runtime.getDeviceProperties(gpu)["l2CacheSize"]
    return max(8 * l2, 1 << 30) // 16 * 16


class _Hbm(Benchmark):
    kind: str  # read | write | copy
    params = {
        "size": Param("size", 0, "bytes per buffer (0: max(8 x L2, 1 GiB))"),
        "gpu": Param("int", 0, "GPU index", minimum=0),
    }

    def unavailable_reason(self) -> str | None:
        return cuda_unavailable_reason()

    def validate(self, params: dict[str, Any]) -> None:
        check_gpu(params["gpu"], (2 if self.kind == "copy" else 1) * (params["size"] or (1 << 30)))

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return [("hbm", params["gpu"])]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        return prepared_on_gpu(params["gpu"], lambda: self._build(params))

    def _build(self, params: dict[str, Any]) -> Prepared:
        cp = cupy_module()
        gpu = params["gpu"]
        probe = LinkProbe(gpu)
        size = buffer_bytes(params["size"], gpu)
        n16 = size // 16
        module = kernel_module("hbm", gpu)
        read, write, copy = (module.get_function(k) for k in ("hbm_read", "hbm_write", "vector_copy"))
        grid, block = launch_shape(gpu)
        stream = cp.cuda.Stream(non_blocking=True)
        l2 = cp.cuda.runtime.getDeviceProperties(gpu)["l2CacheSize"]
        scrub = cp.empty(max(2 * l2, 1 << 20), dtype=cp.uint8)
        src = cp.empty(size, dtype=cp.uint8)
        dst = cp.empty(size, dtype=cp.uint8) if self.kind in ("write", "copy") else None
        sums = cp.zeros(1, dtype=cp.uint32)
        write((grid,), (block,), (src, cp.uint64(n16), cp.uint32(SEED)))
        cp.cuda.Device(gpu).synchronize()

        def flush() -> None:
            cp.cuda.runtime.memsetAsync(scrub.data.ptr, 1, scrub.nbytes, stream.ptr)

        timer = CudaEventTimer(stream, gpu, flush=flush, while_busy=probe.read_under_load)
        args = {
            "read": (read, (src, cp.uint64(n16), sums, cp.int32(0))),
            "write": (write, (dst, cp.uint64(n16), cp.uint32(SEED + 1))),
            "copy": (copy, (src, dst, cp.uint64(n16))),
        }
        kernel, kernel_args = args[self.kind]

        def run() -> None:
            kernel((grid,), (block,), kernel_args, stream=stream)

        def reset() -> None:
            stream.synchronize()
            if dst is not None:
                dst.fill(0)

        def check() -> None:
            stream.synchronize()
            if self.kind == "read":
                sums.fill(0)
                read((grid,), (block,), (src, cp.uint64(n16), sums, cp.int32(1)))
                want = int(np.bitwise_xor.reduce(src.get().view(np.uint32)))  # numpy's, not ours
                if int(sums.get()[0]) != want:
                    raise IntegrityError("hbm_read did not read every word (checksum differs from numpy's)")
            elif self.kind == "write":
                want = cp.arange(n16 * 4, dtype=cp.uint32) + cp.uint32(SEED + 1)
                if not bool(cp.array_equal(dst.view(cp.uint32), want)):
                    raise IntegrityError("hbm_write left words that differ from the pattern")
            elif not bool(cp.array_equal(src, dst)):
                raise IntegrityError("vector_copy's destination differs from its source")

        def derive(m) -> dict[str, Any]:
            facts = probe.facts()
            if self.kind == "copy":
                facts["traffic_gbps"] = 2 * size / m.summary.median / 1e9  # read + write
            return facts

        metadata = {"buffer_bytes": size, "l2_bytes": l2, "launch": {"grid": grid, "block": block},
                    "bytes_counted": "once" if self.kind == "copy" else "moved"}

        def close() -> None:
            stream.synchronize()
            probe.close()

        return Prepared(Workload(size, run, reset, check, timer), metadata, close, derive)


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
