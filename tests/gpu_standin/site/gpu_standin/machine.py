"""The simulated machine behind the stand-in modules: GPUs, their memory, streams, events, and the
order work runs in. TEST ONLY: nothing here measures anything.

Memory: device memory and pinned host memory are numpy buffers in this process, registered by
address range, so every pointer kvbench hands a copy or a kernel is checked against what it claims
to be (an H2D copy whose destination is not device memory fails, as cudaErrorInvalidValue would).

Order: work is queued per stream and runs only when the host waits for it (a stream, event or
device synchronize, a synchronous copy, reading an array). Waiting runs every stream's queue
round-robin, one operation each in turn, so streams progress together as a GPU's would; an
operation waits for the events it was told to wait for; a spin kernel stays blocked until the host
writes its flag, and gives up (sets flag[1], as kernels/spin.cu does after its timeout) only when
the host waits on something that nothing else can reach.

Time: an event records `time.perf_counter()` when its turn comes: numpy's time, no GPU's.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ALIGN = 256


class CudaError(RuntimeError):
    """What the stand-in raises where CUDA would return an error code."""


@dataclass
class Allocation:
    base: int
    size: int
    kind: str  # device | pinned | registered
    device: int
    array: np.ndarray | None  # the bytes (None for registered ranges: the caller owns them)


@dataclass
class Gpu:
    index: int
    total_bytes: int = 8 << 30
    sms: int = 4
    l2_bytes: int = 1 << 20
    name: str = "kvbench GPU stand-in (numpy, not a GPU)"

    @property
    def bus_id(self) -> str:
        return f"00000000:{0x17 + self.index:02X}:00.0"

    @property
    def uuid(self) -> str:
        return f"GPU-5ba4d1e0-0000-4000-8000-{self.index:012x}"


class Op:
    """One queued operation: `fn` runs when its turn comes and `ready()` says it may."""

    def __init__(self, fn: Callable[[], None] | None = None, name: str = "work") -> None:
        self.fn, self.name, self.done = fn, name, False

    def ready(self) -> bool:
        return True

    def run(self) -> None:
        if self.fn is not None:
            self.fn()
        self.done = True


class WaitOp(Op):
    def __init__(self, target: Op | None) -> None:
        super().__init__(None, "wait_event")
        self.target = target

    def ready(self) -> bool:
        return self.target is None or self.target.done


class SpinOp(Op):
    """kernels/spin.cu's spin_until: blocked until flag[0] != 0; gives up only when the host waits
    behind it with nothing else able to run (the kernel's timeout), setting flag[1]."""

    def __init__(self, flag: np.ndarray) -> None:
        super().__init__(None, "spin_until")
        self.flag = flag

    def ready(self) -> bool:
        return bool(self.flag[0] != 0)

    def give_up(self) -> None:
        self.flag[1] = 1
        self.done = True


class Stream:
    def __init__(self, machine: Machine, device: int, ptr: int, non_blocking: bool) -> None:
        self.machine, self.device, self.ptr, self.non_blocking = machine, device, ptr, non_blocking
        self.queue: deque[Op] = deque()
        self.capture: list[Callable[[], None]] | None = None
        self.last: Op | None = None

    def enqueue(self, op: Op) -> Op:
        with self.machine.lock:
            if self.capture is not None:
                if op.fn is None:
                    raise CudaError("the stand-in captures plain work only (no events or waits) into a graph")
                self.capture.append(op.fn)
                return op
            self.queue.append(op)
            self.last = op
            return op

    def synchronize(self) -> None:
        last = self.last
        if last is not None:
            self.machine.run_until(lambda: last.done)


class Event:
    def __init__(self, machine: Machine, device: int) -> None:
        self.machine, self.device = machine, device
        self.op: Op | None = None
        self.time_s: float | None = None

    def record(self, stream: Stream) -> None:
        if stream.device != self.device:
            raise CudaError(f"event of device {self.device} recorded on a stream of device {stream.device}")

        def stamp() -> None:
            self.time_s = self.machine.now()

        self.op = stream.enqueue(Op(stamp, "event_record"))

    def synchronize(self) -> None:
        op = self.op
        if op is not None:
            self.machine.run_until(lambda: op.done)

    def done(self) -> bool:
        return self.op is None or self.op.done


class Machine:
    """Every simulated GPU of this process, their memory and their queues."""

    def __init__(self, gpus: int = 1) -> None:
        self.lock = threading.RLock()
        self.gpus = [Gpu(i) for i in range(gpus)]
        self.allocations: dict[int, Allocation] = {}
        self._bases: list[int] = []  # the allocations' bases, sorted (find by bisection)
        self.streams: list[Stream] = []
        self._null: dict[int, Stream] = {}
        self._next_ptr = 0x1000
        self._last_time = 0.0
        self.current = threading.local()
        self.breakage: dict[str, str] = {}  # {"memcpy": "nothing" | "half", kernel name: ...}: for tests
        self.freed_pools = 0  # how often a memory pool was asked to free its cached blocks
        self.launches: dict[str, int] = {}
        self.peer_access: set[tuple[int, int]] = set()  # (device, peer) pairs enabled by deviceEnablePeerAccess
        self.kernel_device: int | None = None  # the device whose kernel is running now (peer checks)
        # What NVML and CUDA say links the GPUs: "nvswitch" (18 active NVLink 4 links each, to a switch),
        # "pcie" (no NVLink, PCIe peer-to-peer) or "none" (no peer-to-peer: copies staged through the host)
        self.gpu_links = "nvswitch"
        self.batch_arrays: list[tuple[int, int, int]] = []  # (dsts, srcs, sizes) addresses of each batch call

    # --- devices ---------------------------------------------------------------------------
    def device(self) -> int:
        return getattr(self.current, "device", 0)

    def set_device(self, index: int) -> None:
        self.check_index(index)
        self.current.device = index

    def check_index(self, index: int) -> None:
        if not 0 <= index < len(self.gpus):
            raise CudaError(f"cudaErrorInvalidDevice: device {index} of {len(self.gpus)}")

    def now(self) -> float:
        self._last_time = max(time.perf_counter(), self._last_time + 1e-9)
        return self._last_time

    # --- memory ----------------------------------------------------------------------------
    def allocate(self, size: int, kind: str, device: int | None = None) -> tuple[np.ndarray, Allocation]:
        """A new buffer of `size` bytes (`kind` device or pinned), aligned, registered by address."""
        device = self.device() if device is None else device
        self.check_index(device)
        if kind == "device" and size > self.free_bytes(device):
            raise CudaError(f"cudaErrorMemoryAllocation: {size} bytes on stand-in GPU {device}")
        raw = np.empty(size + ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % ALIGN
        array = raw[start:start + size]
        alloc = Allocation(int(array.ctypes.data), size, kind, device, array)
        with self.lock:
            self._add(alloc)
        base = alloc.base
        weakref.finalize(raw, self._forget, base)
        return array, alloc

    def _add(self, alloc: Allocation) -> None:
        self.allocations[alloc.base] = alloc
        bisect.insort(self._bases, alloc.base)

    def _forget(self, base: int) -> None:
        with self.lock:
            if self.allocations.pop(base, None) is not None:
                self._bases.remove(base)

    def register_host(self, address: int, size: int) -> None:
        with self.lock:
            if self.find(address, size) is not None:
                raise CudaError("cudaErrorHostMemoryAlreadyRegistered")
            self._add(Allocation(address, size, "registered", self.device(), None))

    def unregister_host(self, address: int) -> None:
        with self.lock:
            alloc = self.allocations.get(address)
            if alloc is None or alloc.kind != "registered":
                raise CudaError("cudaErrorHostMemoryNotRegistered")
            self._forget(address)

    def free_bytes(self, device: int) -> int:
        used = sum(a.size for a in list(self.allocations.values()) if a.kind == "device" and a.device == device)
        return max(0, self.gpus[device].total_bytes - used)

    def find(self, address: int, size: int = 1) -> Allocation | None:
        with self.lock:
            i = bisect.bisect_right(self._bases, address) - 1
            alloc = self.allocations[self._bases[i]] if i >= 0 else None
        if alloc is not None and address + size <= alloc.base + alloc.size:
            return alloc
        return None

    def view(self, address: int, size: int, want: str) -> np.ndarray:
        """`size` bytes at `address` as a numpy view; `want`: "device" (device memory), "host" (not
        device memory), "mapped" (device, pinned or registered: what a kernel may touch), "any"."""
        alloc = self.find(address, size) if size else None
        kind = alloc.kind if alloc else "pageable"
        allowed = {"device": ("device",), "host": ("pinned", "registered", "pageable"),
                   "mapped": ("device", "pinned", "registered"),
                   "any": ("device", "pinned", "registered", "pageable")}[want]
        if kind not in allowed:
            raise CudaError(f"cudaErrorInvalidValue: {size} bytes at {address:#x} are {kind} memory, "
                            f"where {want} memory is required")
        if size == 0:
            return np.empty(0, dtype=np.uint8)
        kernel = self.kernel_device
        if (want == "mapped" and kind == "device" and kernel is not None and alloc.device != kernel
                and (kernel, alloc.device) not in self.peer_access):
            raise CudaError(f"cudaErrorIllegalAddress: a kernel of device {kernel} touched device {alloc.device}'s "
                            "memory without peer access enabled")
        if alloc is not None and alloc.array is not None:
            lo = address - alloc.base
            return alloc.array[lo:lo + size]
        return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))

    # --- streams and order -----------------------------------------------------------------
    def new_stream(self, device: int | None = None, non_blocking: bool = True) -> Stream:
        device = self.device() if device is None else device
        with self.lock:
            self._next_ptr += 0x10
            stream = Stream(self, device, self._next_ptr, non_blocking)
            self.streams.append(stream)
            return stream

    def null_stream(self, device: int | None = None) -> Stream:
        device = self.device() if device is None else device
        with self.lock:
            if device not in self._null:
                stream = Stream(self, device, 0, False)
                self._null[device] = stream
                self.streams.append(stream)
            return self._null[device]

    def stream_by_ptr(self, ptr: int, device: int | None = None) -> Stream:
        if ptr == 0:
            return self.null_stream(device)
        with self.lock:
            for stream in self.streams:
                if stream.ptr == ptr:
                    return stream
        raise CudaError(f"cudaErrorInvalidResourceHandle: no stream {ptr:#x}")

    def run_until(self, finished: Callable[[], bool]) -> None:
        """Run queued work, every stream in turn, until `finished()`."""
        with self.lock:
            while not finished():
                progressed = False
                for stream in list(self.streams):
                    if stream.queue and stream.queue[0].ready():
                        stream.queue.popleft().run()
                        progressed = True
                if progressed:
                    continue
                spins = [s.queue[0] for s in self.streams if s.queue and isinstance(s.queue[0], SpinOp)]
                if not spins:
                    raise CudaError("the host waits for work that can never run (a wait on an event never reached)")
                spins[0].give_up()
                for s in self.streams:
                    if s.queue and s.queue[0] is spins[0]:
                        s.queue.popleft()

    def synchronize_device(self, device: int | None = None) -> None:
        device = self.device() if device is None else device
        with self.lock:
            streams = [s for s in self.streams if s.device == device]
            self.run_until(lambda: all(not s.queue for s in streams))

    def synchronize_all(self) -> None:
        with self.lock:
            self.run_until(lambda: all(not s.queue for s in self.streams))

    # --- what tests break ------------------------------------------------------------------
    def broken(self, what: str) -> str | None:
        """How `what` (memcpy, memset or a kernel's name) is broken for this test, if it is."""
        return self.breakage.get(what)

    def counted(self, name: str) -> None:
        self.launches[name] = self.launches.get(name, 0) + 1


def copy_bytes(machine: Machine, dst: np.ndarray, src: np.ndarray) -> None:
    """A copy as the stand-in does it: all bytes, or (breakage for tests) none or the first half."""
    how = machine.broken("memcpy")
    if how == "nothing":
        return
    if how == "half":
        half = len(src) // 2
        dst[:half] = src[:half]
        return
    dst[:] = src


_MACHINE: Machine | None = None


def machine() -> Machine:
    """The process's simulated machine; GPU_STANDIN_GPUS (default 1) GPUs."""
    global _MACHINE
    if _MACHINE is None:
        _MACHINE = Machine(int(os.environ.get("GPU_STANDIN_GPUS", "1")))
        for item in filter(None, os.environ.get("GPU_STANDIN_BREAK", "").split(",")):
            what, how = item.split("=")
            _MACHINE.breakage[what] = how
    return _MACHINE


def reset(gpus: int = 1) -> Machine:
    """A fresh machine of `gpus` GPUs (tests: between cases that must not share state)."""
    global _MACHINE
    _MACHINE = Machine(gpus)
    return _MACHINE
