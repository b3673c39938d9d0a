"""The simulated machine behind the stand-in modules: GPUs, their memory, streams, events, and the
order work runs in. TEST ONLY: nothing here measures anything.

Memory: device memory and pinned host memory are numpy buffers in this process, registered by
address range, so every pointer kvbench hands a copy or a kernel is checked against what it claims
to be (an H2D copy whose destination is not device memory fails, as cudaErrorInvalidValue would).

Order: work is queued per stream and runs only when the host waits for it (a stream, event or
device synchronize, a synchronous copy, reading an array). Waiting runs every stream's queue
round-robin, one operation each in turn, so streams progress together as a GPU's would; an
operation waits for what CUDA orders it after; a spin kernel stays blocked until the host
writes its flag, and gives up (sets flag[1], as kernels/spin.cu does after its timeout) only when
the host waits on something that nothing else can reach.

What orders what (vector clocks: each operation carries, per stream, the last operation of that
stream it is ordered after): the operations before it on its own stream; for the legacy default
stream (ptr 0), every earlier operation of the blocking streams of its device, and for a blocking
stream, the legacy stream's earlier ones (non-blocking streams wait for neither); an event it was
told to wait for; and whatever the host had seen finish (a stream, event or device synchronize, an
event queried done) before it enqueued the operation. Every access an operation (or the host) makes
to device memory is checked against the last writer of those bytes and, for a write, their readers
since: one that is not ordered before it is a race (`Race`, listed in `machine.races`), whatever
order the stand-in happened to run them in, because a GPU may run them in the other.

Memory pool: device memory comes from a model of cupy's pool. An array's block goes back to the pool
when the array is freed: it stays registered and readable, as on a GPU, but an access to it is
reported (`FreedBlockUse`, listed in `machine.freed_uses`), and the next allocation of its rounded
size on that device is handed the same block. `free_all_blocks` releases the free blocks.

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


class Race(CudaError):
    """Two accesses to the same device bytes, one a write, that nothing orders: on a GPU either may
    run first (the stand-in's own order proves nothing). TEST ONLY: no CUDA call reports this."""


class FreedBlockUse(CudaError):
    """An access to device memory whose array was freed (its block is back in cupy's pool: still
    readable, and the next allocation of its size gets it). TEST ONLY: a GPU reads it silently."""


SPILL = 0x5A  # what a copy broken as past:N / before:N writes outside its bytes (never the poison 0xA5)
HOST = -1  # the host's entry in a clock: its own accesses to device memory, in program order
POOL_ROUND = 512  # cupy's pool rounds every block up to a multiple of 512 bytes


def merge(into: dict[int, int], other: dict[int, int]) -> None:
    """`into` becomes ordered after everything `other` is (element-wise maximum)."""
    for key, seq in other.items():
        if into.get(key, 0) < seq:
            into[key] = seq


@dataclass
class Allocation:
    base: int
    size: int
    kind: str  # device | pinned | registered
    device: int
    array: np.ndarray | None  # the bytes (None for registered ranges: the caller owns them)
    pooled: bool = False  # a block of the cupy pool model
    freed: bool = False  # pooled, and its array freed: back in the pool
    freed_at: int = 0  # the host's step when it was freed
    # the last access per stream id (HOST: the host): (lo, hi, seq), byte offsets in the block
    writers: dict | None = None
    readers: dict | None = None


@dataclass
class Gpu:
    index: int
    total_bytes: int = 8 << 30
    sms: int = 4
    l2_bytes: int = 1 << 20
    name: str = "kvbench GPU stand-in (numpy, not a GPU)"
    pci_device_id: int = 0x0000DEAD
    serial: str | None = None  # a test swaps a board by setting it; None: the stand-in's own per index

    @property
    def board_serial(self) -> str:
        return self.serial or f"STANDIN{self.index:06d}"

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
        self.after: dict[int, int] = {}  # ordered after these too (an event waited for)
        self.clock: dict[int, int] = {}  # set when enqueued: what it is ordered after, itself included
        self.stream: Stream | None = None
        self.seq = 0

    def ready(self) -> bool:
        """Everything it is ordered after has run (a GPU would not start it before)."""
        stream = self.stream
        if stream is None:
            return True
        for sid, seq in self.clock.items():
            if sid != stream.sid and sid != HOST and stream.machine.by_sid[sid].done_seq < seq:
                return False
        return True

    def run(self) -> None:
        if self.fn is not None:
            self.fn()
        self.finish()

    def finish(self) -> None:
        self.done = True
        if self.stream is not None:
            self.stream.done_seq = self.seq


class WaitOp(Op):
    def __init__(self, target: Op | None) -> None:
        super().__init__(None, "wait_event")
        self.target = target
        if target is not None:
            self.after = dict(target.clock)


class SpinOp(Op):
    """kernels/spin.cu's spin_until: blocked until flag[0] != 0; gives up only when the host waits
    behind it with nothing else able to run (the kernel's timeout), setting flag[1]."""

    def __init__(self, flag: np.ndarray) -> None:
        super().__init__(None, "spin_until")
        self.flag = flag

    def ready(self) -> bool:
        return super().ready() and bool(self.flag[0] != 0)

    def give_up(self) -> None:
        self.flag[1] = 1
        self.finish()


class Stream:
    def __init__(self, machine: Machine, device: int, ptr: int, non_blocking: bool) -> None:
        self.machine, self.device, self.ptr, self.non_blocking = machine, device, ptr, non_blocking
        self.queue: deque[Op] = deque()
        self.capture: list[Callable[[], None]] | None = None
        self.last: Op | None = None
        self.sid = len(machine.by_sid)
        machine.by_sid.append(self)
        self.count = 0  # operations enqueued
        self.done_seq = 0  # the last of them that has run
        self.clock: dict[int, int] = {}  # what its next operation is ordered after

    @property
    def legacy(self) -> bool:
        return self.ptr == 0

    def describe(self) -> str:
        kind = "legacy default" if self.legacy else "non-blocking" if self.non_blocking else "blocking"
        return f"the {kind} stream {self.ptr:#x} of device {self.device}"

    def enqueue(self, op: Op) -> Op:
        m = self.machine
        with m.lock:
            if self.capture is not None:
                if op.fn is None:
                    raise CudaError("the stand-in captures plain work only (no events or waits) into a graph")
                self.capture.append(op.fn)
                return op
            clock = dict(self.clock)
            merge(clock, m.host_clock)
            merge(clock, op.after)
            if self.legacy:  # the legacy stream waits for every blocking stream of its device
                for other in m.streams:
                    if other is not self and other.device == self.device and not other.non_blocking:
                        merge(clock, other.clock)
            elif not self.non_blocking:  # a blocking stream waits for the legacy stream
                null = m._null.get(self.device)
                if null is not None:
                    merge(clock, null.clock)
            self.count += 1
            clock[self.sid] = self.count
            op.clock, op.stream, op.seq = clock, self, self.count
            self.clock = clock
            self.queue.append(op)
            self.last = op
            return op

    def synchronize(self) -> None:
        last = self.last
        if last is not None:
            self.machine.run_until(lambda: last.done)
            self.machine.host_saw(last.clock)


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
            self.machine.host_saw(op.clock)

    def done(self) -> bool:
        if self.op is not None and self.op.done:
            self.machine.host_saw(self.op.clock)  # cudaEventQuery's success orders the host after it
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
        self.by_sid: list[Stream] = []  # every stream by its id in clocks
        self.host_clock: dict[int, int] = {}  # what the host has seen finish, and its own accesses
        self.running: Op | None = None  # the operation running now (None: the host is accessing)
        self.races: list[str] = []
        self.freed_uses: list[str] = []
        # "batch" (cudaMemcpyBatchAsync there), "no-batch" (a libcudart without it) or "missing" (none loads)
        self.cudart = "batch"

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

    def pool_allocate(self, size: int, owner: object, device: int | None = None) -> tuple[np.ndarray, Allocation]:
        """`size` bytes of device memory from the cupy pool model: a free block of the same rounded size
        on `device` if there is one (the most recently freed), else a new one. The block goes back to
        the pool when `owner` (what the array keeps alive) is freed."""
        device = self.device() if device is None else device
        self.check_index(device)
        rounded = max(POOL_ROUND, -(-size // POOL_ROUND) * POOL_ROUND)
        with self.lock:
            reuse = [a for a in self.allocations.values()
                     if a.pooled and a.freed and a.device == device and a.size == rounded]
            if reuse:
                alloc = reuse[-1]
                alloc.freed, alloc.writers, alloc.readers = False, None, None
            else:
                _array, alloc = self.allocate(rounded, "device", device)
                alloc.pooled = True
        weakref.finalize(owner, self._pool_free, alloc)
        return alloc.array[:size], alloc

    def _pool_free(self, alloc: Allocation) -> None:
        with self.lock:
            alloc.freed, alloc.writers, alloc.readers = True, None, None
            alloc.freed_at = self._host_step()

    def _host_step(self) -> int:
        """The host's next step in its program order (its entry in clocks)."""
        self._host_seq = getattr(self, "_host_seq", 0) + 1
        self.host_clock[HOST] = self._host_seq
        return self._host_seq

    def free_pool_blocks(self) -> int:
        """Release every free block of the pool (cupy's free_all_blocks); how many."""
        with self.lock:
            free = [a.base for a in self.allocations.values() if a.pooled and a.freed]
            for base in free:
                self._forget_now(base)
        return len(free)

    def _forget_now(self, base: int) -> None:
        if self.allocations.pop(base, None) is not None:
            self._bases.remove(base)

    def pool_bytes(self, device: int, in_use: bool) -> int:
        """Bytes of the pool's blocks on `device` (in use only, or all it holds)."""
        return sum(a.size for a in list(self.allocations.values())
                   if a.pooled and a.device == device and (not in_use or not a.freed))

    # --- who accessed what, in which order ---------------------------------------------------
    def host_saw(self, clock: dict[int, int]) -> None:
        """The host waited for (or saw finished) an operation of `clock`: what it enqueues next, and
        what it accesses, is ordered after it."""
        with self.lock:
            merge(self.host_clock, {k: v for k, v in clock.items() if k != HOST})

    def touch(self, array: np.ndarray, access: str) -> None:
        """The running operation (or, outside one, the host) reads or writes `array`'s bytes (`access`
        "read" or "write"): checked against the other accesses of the block (see the module's doc)."""
        if array.nbytes:
            self.access(int(array.ctypes.data), int(array.nbytes), access)

    def access(self, address: int, size: int, access: str) -> None:
        alloc = self.find(address, size)
        if alloc is None or alloc.kind != "device" or size <= 0:
            return  # host memory: the host and its copies order themselves
        op = self.running
        with self.lock:
            if op is None:
                sid, seq, clock, who = HOST, self._host_step(), self.host_clock, "the host"
            else:
                sid, seq, clock = op.stream.sid, op.seq, op.clock
                who = f"{op.name} on {op.stream.describe()}"
            where = (f"{access}s bytes [{address - alloc.base:#x}, {address - alloc.base + size:#x}) of a "
                     f"{alloc.size}-byte block of device {alloc.device}")
            # work enqueued before the free may still run (cupy's pool is stream-ordered); after it, not
            if alloc.freed and clock.get(HOST, 0) >= alloc.freed_at:
                message = (f"stand-in: {who} {where} whose array was freed: the block is back in cupy's "
                           "memory pool, and the next allocation of its size gets it (hold the array for "
                           "as long as the work uses it)")
                self.freed_uses.append(message)
                raise FreedBlockUse(message)
            lo, hi = address - alloc.base, address - alloc.base + size
            alloc.writers = alloc.writers or {}
            alloc.readers = alloc.readers or {}
            against = [("written", alloc.writers)] + ([("read", alloc.readers)] if access == "write" else [])
            for verb, entries in against:
                for other, (olo, ohi, oseq) in entries.items():
                    if other != sid and olo < hi and lo < ohi and clock.get(other, 0) < oseq:
                        by = "the host" if other == HOST else self.by_sid[other].describe()
                        message = (f"stand-in race: {who} {where}, last {verb} by {by} with nothing ordering "
                                   "the two (no stream order, event wait or host synchronize between them)")
                        self.races.append(message)
                        raise Race(message)
            mine = alloc.writers if access == "write" else alloc.readers
            if sid in mine:
                olo, ohi, _ = mine[sid]
                lo, hi = min(lo, olo), max(hi, ohi)
            mine[sid] = (lo, hi, seq)
            if access == "write":  # what this write covers and is ordered after needs no more checking
                for entries in (alloc.writers, alloc.readers):
                    for other in [o for o, (olo, ohi, oseq) in entries.items()
                                  if o != sid and lo <= olo and ohi <= hi and clock.get(o, 0) >= oseq]:
                        del entries[other]

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

    def free_bytes(self, device: int) -> int:  # the pool's free blocks are held: not free to the driver
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
                        op = stream.queue.popleft()
                        self.running = op
                        try:
                            op.run()
                        finally:
                            self.running = None
                            if not op.done:  # it raised: what waits behind it must not wait for ever
                                op.finish()
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
            for stream in streams:
                self.host_saw(stream.clock)

    def synchronize_all(self) -> None:
        with self.lock:
            self.run_until(lambda: all(not s.queue for s in self.streams))
            for stream in self.streams:
                self.host_saw(stream.clock)

    # --- what tests break ------------------------------------------------------------------
    def broken(self, what: str) -> str | None:
        """How `what` (memcpy, memset or a kernel's name) is broken for this test, if it is: "nothing",
        "half", "past:N" or "before:N" (all bytes, then N more written after its end or before its
        start). `what@D` breaks only the work that runs on device D's streams (one direction of a
        bidirectional case)."""
        running = self.running
        if running is not None and running.stream is not None:
            scoped = self.breakage.get(f"{what}@{running.stream.device}")
            if scoped is not None:
                return scoped
        return self.breakage.get(what)

    def spill(self, what: str, address: int, size: int) -> None:
        """Where `what` is broken as "past:N" or "before:N": N bytes of SPILL written just after (or
        before) the `size` bytes it wrote at `address`, as a copy or kernel off by N would. Memory
        that is no allocation is an illegal address, as on a GPU (never written here)."""
        how = self.broken(what) or ""
        where, _, count = how.partition(":")
        if where not in ("past", "before"):
            return
        n = int(count)
        start = address + size if where == "past" else address - n
        if self.find(start, n) is None:
            raise CudaError(f"cudaErrorIllegalAddress: {what} wrote {n} bytes at {start:#x}, outside any allocation")
        out = self.view(start, n, "any")
        self.touch(out, "write")
        out[:] = SPILL

    def counted(self, name: str) -> None:
        self.launches[name] = self.launches.get(name, 0) + 1


def copy_bytes(machine: Machine, dst: np.ndarray, src: np.ndarray) -> None:
    """A copy as the stand-in does it: all bytes, or (breakage for tests) none, the first half, or all
    and N bytes more past its end or before its start."""
    machine.touch(src, "read")
    machine.touch(dst, "write")
    how = machine.broken("memcpy")
    if how == "nothing":
        return
    if how == "half":
        half = len(src) // 2
        dst[:half] = src[:half]
        return
    dst[:] = src
    if dst.nbytes:
        machine.spill("memcpy", int(dst.ctypes.data), int(dst.nbytes))


_MACHINE: Machine | None = None


# GPU_STANDIN_MODEL: the simulated GPUs present themselves as a real board does (name, SMs, L2, memory,
# PCI device id, what NVML answers) so kvbench's SKU lookups (peaks, rules, profiles) take that board's path.
# Facts as described, never measurements: "h100-vm" is the device tool's `nvidia-h100-x1` as its KINDS.md
# describes it (one H100 80GB HBM3, 132 SMs, 50 MB of L2, 81,559 MiB) in a VM as kvbench must expect one:
# no active NVLink, health counters read and clean, XID events refused (NotSupported), persistence mode off.
PERSONAS = {
    "h100-vm": {"gpu": {"name": "NVIDIA H100 80GB HBM3", "sms": 132, "l2_bytes": 50 * 1000 * 1000,
                        "total_bytes": 81559 << 20, "pci_device_id": 0x233010DE},
                "gpu_links": "none", "health": {"persistence": False, "xid_events": "not_supported"}},
}


def dress(target: Machine, model: str) -> Machine:
    """`target` presenting itself as PERSONAS[model] (a test's choice; GPU_STANDIN_MODEL for a subprocess)."""
    persona = PERSONAS[model]
    for gpu in target.gpus:
        for key, value in persona["gpu"].items():
            setattr(gpu, key, value)
    target.gpu_links = persona["gpu_links"]
    target.health = dict(persona["health"])
    return target


def machine() -> Machine:
    """The process's simulated machine; GPU_STANDIN_GPUS (default 1) GPUs, GPU_STANDIN_MODEL's board."""
    global _MACHINE
    if _MACHINE is None:
        _MACHINE = Machine(int(os.environ.get("GPU_STANDIN_GPUS", "1")))
        if os.environ.get("GPU_STANDIN_MODEL"):
            dress(_MACHINE, os.environ["GPU_STANDIN_MODEL"])
        for item in filter(None, os.environ.get("GPU_STANDIN_BREAK", "").split(",")):
            what, how = item.split("=")
            _MACHINE.breakage[what] = how
        _MACHINE.cudart = os.environ.get("GPU_STANDIN_CUDART", "batch")
    return _MACHINE


def reset(gpus: int = 1) -> Machine:
    """A fresh machine of `gpus` GPUs (tests: between cases that must not share state)."""
    global _MACHINE
    _MACHINE = Machine(gpus)
    return _MACHINE
