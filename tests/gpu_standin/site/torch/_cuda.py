"""torch.cuda of the kvbench GPU stand-in (TEST ONLY): streams and events on the simulated GPUs."""

from __future__ import annotations

import contextlib
import types

from gpu_standin import machine as machine_module
from gpu_standin.machine import machine


def _index(device) -> int:
    if device is None:
        return machine().device()
    if isinstance(device, int):
        return device
    return device.index if device.index is not None else 0


class Stream:
    def __init__(self, device=None, priority: int = 0) -> None:
        self._s = machine().new_stream(_index(device), non_blocking=True)
        self.device_index = self._s.device

    def synchronize(self) -> None:
        self._s.synchronize()


class _NullStream(Stream):
    def __init__(self, device: int) -> None:
        self._s = machine().null_stream(device)
        self.device_index = device


_current: dict[int, Stream] = {}


def current_stream(device=None) -> Stream:
    index = _index(device)
    return _current.get(index) or _NullStream(index)


@contextlib.contextmanager
def stream(s: Stream):
    previous = _current.get(s.device_index)
    _current[s.device_index] = s
    try:
        yield s
    finally:
        if previous is None:
            _current.pop(s.device_index, None)
        else:
            _current[s.device_index] = previous


class Event:
    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        self._e: machine_module.Event | None = None

    def record(self, s: Stream | None = None) -> None:
        s = s or current_stream()
        self._e = machine_module.Event(machine(), s._s.device)
        self._e.record(s._s)

    def synchronize(self) -> None:
        if self._e is not None:
            self._e.synchronize()

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between two completed events (numpy's time, not a GPU's)."""
        a, b = self._e, end._e
        if a is None or b is None or not (a.done() and b.done()):
            raise RuntimeError("CUDA error: device not ready")
        return (b.time_s - a.time_s) * 1e3


def fill(module: types.ModuleType) -> None:
    module.Stream, module.Event, module.stream, module.current_stream = Stream, Event, stream, current_stream
    module.is_available = lambda: len(machine().gpus) > 0
    module.device_count = lambda: len(machine().gpus)
    module.synchronize = lambda device=None: machine().synchronize_device(_index(device))
    module.get_device_name = lambda device=None: machine().gpus[_index(device)].name
    module.set_device = lambda device: machine().set_device(_index(device))
    module.current_device = lambda: machine().device()
