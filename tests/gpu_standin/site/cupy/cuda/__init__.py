"""cupy.cuda as the kvbench GPU stand-in answers it (TEST ONLY: numpy, no GPU)."""

from __future__ import annotations

import ctypes

from gpu_standin import machine as _machine_module
from gpu_standin.machine import CudaError, Op, machine

from cupy.cuda import runtime

__all__ = ["Device", "Event", "Graph", "Stream", "alloc_pinned_memory", "get_elapsed_time", "runtime"]


class Device:
    def __init__(self, device: int | None = None) -> None:
        m = machine()
        self.id = m.device() if device is None else int(device)
        m.check_index(self.id)
        self._previous: list[int] = []

    def __enter__(self) -> Device:  # noqa: PYI034
        m = machine()
        self._previous.append(m.device())
        m.set_device(self.id)
        return self

    def __exit__(self, *exc) -> None:
        machine().set_device(self._previous.pop())

    def synchronize(self) -> None:
        machine().synchronize_device(self.id)

    @property
    def pci_bus_id(self) -> str:
        return machine().gpus[self.id].bus_id


class Stream:
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptr: int | None = None) -> None:
        m = machine()
        self._s = m.null_stream() if null else m.new_stream(non_blocking=non_blocking)
        self._previous: list[Stream] = []

    @property
    def ptr(self) -> int:
        return self._s.ptr

    @property
    def device_id(self) -> int:
        return self._s.device

    def synchronize(self) -> None:
        self._s.synchronize()

    def wait_event(self, event: Event) -> None:
        from gpu_standin.machine import WaitOp

        self._s.enqueue(WaitOp(event._e.op))

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def begin_capture(self) -> None:
        if self._s.capture is not None:
            raise CudaError("cudaErrorIllegalState: the stream is already capturing")
        self._s.capture = []

    def end_capture(self) -> Graph:
        if self._s.capture is None:
            raise CudaError("cudaErrorIllegalState: the stream is not capturing")
        work, self._s.capture = self._s.capture, None
        return Graph(work)

    def __enter__(self) -> Stream:  # noqa: PYI034
        self._previous.append(get_current_stream())
        _set_current(self)
        return self

    def __exit__(self, *exc) -> None:
        _set_current(self._previous.pop())


class Graph:
    """The work a stream captured, replayed in order on the stream it is launched on."""

    def __init__(self, work: list) -> None:
        self.work = list(work)
        self.uploaded = False

    def upload(self, stream: Stream) -> None:
        self.uploaded = True

    def launch(self, stream: Stream) -> None:
        work = self.work

        def replay() -> None:
            for fn in work:
                fn()

        stream._s.enqueue(Op(replay, "graph"))


def get_current_stream() -> Stream:
    current = getattr(machine().current, "stream", None)
    if current is None or current._s.device != machine().device():
        current = Stream(null=True)
    return current


def _set_current(stream: Stream) -> None:
    machine().current.stream = stream


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self._e = _machine_module.Event(machine(), machine().device())

    def record(self, stream: Stream | None = None) -> None:
        self._e.record((stream or get_current_stream())._s)

    def synchronize(self) -> None:
        self._e.synchronize()

    @property
    def done(self) -> bool:
        return self._e.done()


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events of one device (numpy's time, not a GPU's)."""
    a, b = start._e, end._e
    if a.device != b.device:
        raise CudaError("cudaErrorInvalidResourceHandle: events of different devices")
    if not (a.done() and b.done()) or a.time_s is None or b.time_s is None:
        raise CudaError("cudaErrorNotReady: an event has not completed")
    return (b.time_s - a.time_s) * 1e3


def alloc_pinned_memory(size: int):
    """Page-locked host memory: a numpy buffer registered as pinned, handed out as a ctypes array
    (the buffer protocol numpy.frombuffer needs) with `.ptr`, as cupy's PinnedMemoryPointer has."""
    array, alloc = machine().allocate(size, "pinned")
    kind = type("PinnedMemoryPointer", (ctypes.c_uint8 * size,), {})
    memory = kind.from_address(alloc.base)
    memory.ptr, memory.size, memory._owner = alloc.base, size, array
    return memory


class MemoryPointer:
    """An array's address; like cupy's, it keeps the memory alive while it is held (its `ptr`, an int,
    does not)."""

    def __init__(self, ptr: int, owner: object = None) -> None:
        self.ptr, self._owner = ptr, owner


Stream.null = None  # type: ignore[assignment]
