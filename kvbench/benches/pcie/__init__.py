"""`pcie.h2d`, `pcie.d2h`, `pcie.bidir`: host memory ↔ GPU over PCIe.

`memory` is pinned (cudaHostAlloc), pageable, or numa:N (bound with mbind, then
cudaHostRegister'ed). `engine=ce` uses the copy engine (cudaMemcpyAsync), `engine=sm` a kernel
copying through the host buffer's device pointer. Copies are timed with CUDA events behind a
spin kernel; pageable copies time what a user sees (synchronous cudaMemcpy on the host clock).
`pcie.bidir` runs both directions at once on two streams and reports the sum, with each
direction in the metadata; it times host-to-device alone interleaved with itself, so the sum over
one direction (rule pcie-bidir-sum) is a ratio per pair of samples. `backend=torch` times the same
copies through cupy interleaved with torch's (rule pcie-torch-agrees), where cupy runs.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.cuda import (
    cuda_unavailable_reason,
    cupy_module,
    device_count,
    gpu_numa_node,
    kernel_module,
    launch_shape,
    link_probe,
)
from kvbench.benches.base import Benchmark, Prepared, built_in_stack, paired_with, prepared_on_gpu
from kvbench.benches.declared import PCIE
from kvbench.benches.registry import register
from kvbench.benches.under_load import refuse_load, with_load
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.path import Segment
from kvbench.measure.cuda_timer import CudaEventTimer
from kvbench.measure.engine import Pair, Workload
from kvbench.measure.timer import MonotonicTimer
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import kind_unavailable_reason, parse_kind
from kvbench.memory.pattern import fill_pattern, poison_between_copies
from kvbench.memory.placement import numa_placement
from kvbench.memory.registered import host_buffer

H2D, D2H = 1, 2  # cudaMemcpyKind
# Untimed copies after the timed ones, per stream: covers directions up to 2x apart. nvbandwidth's
# bidirectional tests likewise make the interfering copy twice the measured one.
BIDIR_PAD = 1.0


def registered_pointer_reason(gpu: int) -> str | None:
    """Why a kernel on `gpu` cannot use a registered buffer's host address (None: it can)."""
    cp = cupy_module()
    if cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrCanUseHostPointerForRegisteredMem, gpu):
        return None
    return (f"engine=sm on numa:N: GPU {gpu} cannot use a registered buffer's host address "
            "(cudaDevAttrCanUseHostPointerForRegisteredMem = 0), and cupy has no cudaHostGetDevicePointer")


class _Pcie(Benchmark):
    direction: str  # h2d | d2h | bidir
    params = PCIE  # kvbench/benches/declared.py

    def unavailable_reason(self) -> str | None:
        return cuda_unavailable_reason()

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        if params["backend"] == "torch":
            from kvbench.benches.pcie.torch_backend import torch_unavailable_reason

            return torch_unavailable_reason()
        kind = parse_kind(params["memory"])
        reason = cuda_unavailable_reason() or kind_unavailable_reason(kind)
        if reason is None and kind.name == "numa" and params["engine"] == "sm":
            reason = registered_pointer_reason(params["gpu"])
        return reason

    def validate(self, params: dict[str, Any]) -> None:
        kind = parse_kind(params["memory"])
        if kind.name not in ("pinned", "pageable", "numa"):
            raise BadInput(f"bad memory={params['memory']}: the host side is pinned, pageable or numa:N")
        if kind.name == "numa":
            reason = kind_unavailable_reason(kind)
            if reason and "NUMA" in reason:
                raise BadInput(f"bad memory={params['memory']}: {reason}")
        if params["engine"] == "sm" and kind.name == "pageable":
            raise BadInput("bad engine=sm with memory=pageable: a kernel reaches only page-locked host memory "
                           "(use pinned or numa:N)")
        if params["engine"] == "sm" and params["size"] % 16:
            raise BadInput(f"bad size={params['size']}: engine=sm copies 16-byte vectors")
        if params["backend"] == "torch" and (kind.name not in ("pinned", "pageable") or params["engine"] != "ce"
                                             or self.direction == "bidir" or params["gpus"] == "all"):
            raise BadInput("bad backend=torch: it runs pcie.h2d / pcie.d2h, engine=ce, memory=pinned or pageable")
        if params["gpus"] == "all" and (kind.name != "pinned" or params["engine"] != "ce" or self.direction == "bidir"):
            raise BadInput("bad gpus=all: all GPUs at once runs pcie.h2d / pcie.d2h with memory=pinned engine=ce")
        if self.direction == "bidir" and kind.name == "pageable":
            raise BadInput("bad memory=pageable for pcie.bidir: synchronous pageable copies cannot overlap")
        refuse_load(params, "it runs beside the cupy copies of one GPU (backend=cupy, gpus=one)"
                    if params["backend"] != "cupy" or params["gpus"] != "one" else None)
        check_gpu(params["gpu"], (2 if self.direction == "bidir" else 1) * params["size"])
        lanes = (device_count() or 1) if params["gpus"] == "all" else 1
        check_fits((2 if self.direction == "bidir" else 1) * params["size"] * lanes, f"host side ({kind})")

    def path(self, params: dict[str, Any]) -> list[Segment]:
        if params["gpus"] == "all":
            return [("dram_read",), ("all_gpu_links",)]
        link = ("gpu_link_both", params["gpu"]) if self.direction == "bidir" else ("gpu_link", params["gpu"])
        return [("dram_read",), link]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        if params["gpus"] == "all":
            from kvbench.benches.pcie.all_gpus import prepare_all

            return prepare_all(self.direction, params["size"])
        if params["backend"] == "torch":
            from kvbench.benches.pcie.torch_backend import prepare_torch

            prepared = prepare_torch(self.direction, params["memory"], params["size"], params["gpu"])
            if cuda_unavailable_reason() is not None:  # no cupy to compare with: torch alone, unpaired
                return prepared
            # the same copies through cupy, interleaved: the two stacks' ratio per pair (pcie-torch-agrees)
            return paired_with(prepared, {"backend": "cupy"}, lambda: prepared_on_gpu(
                params["gpu"], lambda: self._build({**params, "backend": "cupy"})))
        return prepared_on_gpu(params["gpu"], lambda: with_load(self._build(params), params["load"], params["gpu"]))

    def _build(self, params: dict[str, Any]) -> Prepared:
        return built_in_stack(lambda stack: self._build_in(params, stack))

    def _build_in(self, params: dict[str, Any], stack: ExitStack) -> Prepared:
        cp = cupy_module()
        gpu, size, engine = params["gpu"], params["size"], params["engine"]
        bidir = self.direction == "bidir"
        pageable = parse_kind(params["memory"]).name == "pageable"
        probe = link_probe(gpu)
        stack.callback(probe.close)
        host, registered = host_buffer(params["memory"], size * (2 if bidir else 1))
        stack.enter_context(host)
        stack.callback(cp.cuda.Device(gpu).synchronize)  # nothing in flight when the buffers go
        device = cp.empty(size * (2 if bidir else 1), dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        side = cp.cuda.Stream(non_blocking=True) if bidir else None
        copy_kernel = kernel_module("hbm", gpu).get_function("vector_copy")
        grid, block = launch_shape(gpu)
        h_arr = host.host_array
        fill_pattern(h_arr, seed=3)
        pattern = np.empty(device.nbytes, dtype=np.uint8)
        fill_pattern(pattern, seed=5)
        device.set(pattern)  # what D2H copies carry
        h_ptr, d_ptr = host.address, device.data.ptr

        def copy(dst: int, src: int, kind: int, on) -> None:
            if engine == "ce":
                cp.cuda.runtime.memcpyAsync(dst, src, size, kind, on.ptr)
            else:
                copy_kernel((grid,), (block,), (cp.uint64(src), cp.uint64(dst), cp.uint64(size // 16)), stream=on)

        def enqueue(kind: int, offset: int, on) -> None:
            dst, src = (d_ptr + offset, h_ptr + offset) if kind == H2D else (h_ptr + offset, d_ptr + offset)
            copy(dst, src, kind, on)

        if bidir:
            def run() -> None:
                enqueue(H2D, 0, stream)
                enqueue(D2H, size, side)
        elif pageable:
            kind = H2D if self.direction == "h2d" else D2H

            def run() -> None:  # what a user of pageable memory sees: a synchronous copy
                dst, src = (d_ptr, h_ptr) if kind == H2D else (h_ptr, d_ptr)
                cp.cuda.runtime.memcpy(dst, src, size, kind)
        else:
            kind = H2D if self.direction == "h2d" else D2H

            def run() -> None:
                enqueue(kind, 0, stream)

        # Both directions: each stream gets as many copies again, untimed, so whichever finishes
        # its timed copies first keeps the other direction contended to the end of the window.
        timer = MonotonicTimer() if pageable else CudaEventTimer(
            stream, gpu, side_streams=(side,) if side else (), while_busy=probe.read_under_load,
            pad_fraction=BIDIR_PAD if bidir else 0.0)

        cleared = ([device[:size]] if self.direction in ("h2d", "bidir") else []) + (
            [h_arr[size if bidir else 0:][:size]] if self.direction in ("d2h", "bidir") else [])

        def reset() -> None:
            poison_between_copies(gpu, *cleared)

        def check() -> None:
            cp.cuda.Device(gpu).synchronize()
            if self.direction in ("h2d", "bidir") and not np.array_equal(device[:size].get(), h_arr[:size]):
                raise IntegrityError("host-to-device copy: GPU buffer differs from the host's bytes")
            if self.direction in ("d2h", "bidir"):
                offset = size if bidir else 0
                if not np.array_equal(h_arr[offset:offset + size], pattern[offset:offset + size]):
                    raise IntegrityError("device-to-host copy: host buffer differs from the GPU's bytes")

        def derive(m) -> dict[str, Any]:
            facts = probe.facts()
            if bidir and isinstance(timer, CudaEventTimer) and timer.last_stream_s:
                rates = facts["directions_gbps"] = bidir_rates(size, m.summary.median, timer.last_loops,
                                                               *timer.last_stream_s, busy_s=timer.last_busy_s)
                alone = [d for d, busy in rates["opposite_busy"].items() if not busy]
                if alone:
                    facts["warning"] = (f"{', '.join(alone)} ran its last copies with the other direction idle "
                                        "(directions over 2x apart): its rate is partly uncontended")
            return facts

        metadata = {"engine": engine, "timer": timer.name, "registered": registered,
                    "buffers": {"host": host.describe()}, "gpu": gpu,
                    **numa_placement(gpu_numa_node(gpu), host.numa_node),
                    "bytes_counted": "sum of both directions" if bidir else "one direction"}

        bytes_per_op = size * (2 if bidir else 1)
        workload = Workload(bytes_per_op, run, reset, check, timer)
        if pageable and not bidir and engine == "ce":  # what page-locking buys, measured in this case
            workload.pair = _pinned_twin(self.direction, size, gpu, device, stream, stack)
        near = _near_node(params["memory"], metadata["gpu_numa_node"])
        if near is not None and not bidir:  # a far node's cost, measured against the GPU's own node in this case
            workload.pair = _host_twin(f"numa:{near}", "near-node copy beside the far one", self.direction, size,
                                       gpu, device, stream, stack, copy)
        if bidir:  # both directions over host-to-device alone (rule pcie-bidir-sum), measured in this case
            workload.pair = _host_twin(params["memory"], "host-to-device copy beside both directions", "h2d", size,
                                       gpu, device, stream, stack, copy, against={"bench": "pcie.h2d"})
        return Prepared(workload, metadata, derive=derive)


def _near_node(memory: str, gpu_node: int | None) -> int | None:
    """The GPU's own node when `memory` is bound to another node that the near side can be bound
    beside (None: not a far case, or the GPU's node is unknown or not a node this host has)."""
    from kvbench.memory import numa

    kind = parse_kind(memory)
    if kind.name != "numa" or gpu_node is None or gpu_node == kind.index or gpu_node not in numa.online_nodes():
        return None
    return gpu_node


def _pinned_twin(direction: str, size: int, gpu: int, device, stream, stack: ExitStack) -> Pair:
    """The same copy from a pinned buffer of the same size into the same GPU buffer, on the same
    stream, timed as a pinned case is (CUDA events): the pageable case's ratio to pinned, per pair
    of samples (docs/measurement.md)."""
    cp = cupy_module()

    def copy(dst: int, src: int, kind: int, on) -> None:
        cp.cuda.runtime.memcpyAsync(dst, src, size, kind, on.ptr)

    return _host_twin("pinned", "pinned copy beside the pageable one", direction, size, gpu, device, stream, stack,
                      copy)


def _host_twin(memory: str, label: str, direction: str, size: int, gpu: int, device, stream, stack: ExitStack,
               copy, against: dict[str, Any] | None = None) -> Pair:
    """The case's copy (`copy(dst, src, kind, stream)`) of `size` bytes in `direction` between a host
    buffer of `memory` and the same GPU buffer, on the same stream, timed with CUDA events and checked
    as the case is: the other side of a ratio taken per pair of samples (docs/measurement.md), named
    by `against` (default: its memory)."""
    cp = cupy_module()
    host, _ = host_buffer(memory, size)
    stack.enter_context(host)
    h_arr, h2d = host.host_array, direction == "h2d"
    fill_pattern(h_arr, seed=3)  # the bytes the case's host buffer holds, so the GPU buffer's check is the same
    pattern = np.empty(size, dtype=np.uint8)
    fill_pattern(pattern, seed=5)
    dst, src = (device.data.ptr, host.address) if h2d else (host.address, device.data.ptr)

    def run() -> None:
        copy(dst, src, H2D if h2d else D2H, stream)

    def reset() -> None:
        poison_between_copies(gpu, device[:size] if h2d else h_arr)

    def check() -> None:
        cp.cuda.Device(gpu).synchronize()
        if not np.array_equal(device[:size].get() if h2d else h_arr, h_arr if h2d else pattern):
            raise IntegrityError(f"{label}: {'GPU' if h2d else 'host'} buffer differs")

    return Pair(against or {"memory": memory}, Workload(size, run, reset, check, CudaEventTimer(stream, gpu)))


def bidir_rates(size: int, window_s: float, loops: int, h2d_s: float, d2h_s: float,
                busy_s: list[float] | None = None) -> dict[str, Any]:
    """Each direction of a bidirectional sample at its own rate, and the sum, in GB/s.

    `window_s` is the median time of one operation (both copies); `h2d_s` / `d2h_s` are how long
    each stream took for the `loops` timed copies of the last sample, from the common start, and
    `busy_s` when each stream finished its untimed padding copies after them. A direction was
    measured under full contention if the other stream was still copying when it finished:
    `opposite_busy` says so per direction; `overlap` is the shorter timed window over the longer.
    """
    h2d_busy, d2h_busy = busy_s or (h2d_s, d2h_s)
    return {
        "h2d": size * loops / h2d_s / 1e9,
        "d2h": size * loops / d2h_s / 1e9,
        "sum": 2 * size / window_s / 1e9,
        "overlap": min(h2d_s, d2h_s) / max(h2d_s, d2h_s),
        "opposite_busy": {"h2d": d2h_busy >= h2d_s, "d2h": h2d_busy >= d2h_s},
        "basis": "each direction from its own stream's events in the last sample; the sum (both directions' "
                 "bytes over the window in which both finished their timed copies) from the median",
    }


@register
class PcieH2D(_Pcie):
    id = "pcie.h2d"
    description = "host memory to GPU over PCIe (copy engine or SM kernel)"
    direction = "h2d"


@register
class PcieD2H(_Pcie):
    id = "pcie.d2h"
    description = "GPU to host memory over PCIe (copy engine or SM kernel)"
    direction = "d2h"


@register
class PcieBidir(_Pcie):
    id = "pcie.bidir"
    description = "both directions at once on two streams (reports the sum; each direction in metadata)"
    direction = "bidir"
