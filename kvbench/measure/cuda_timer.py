"""CUDA event timers: the copies or kernels of a sample enqueued behind a spin kernel that the host
releases (nvbandwidth's trick), so host submission never enters the timed window; one GPU, or
every GPU released together."""

from __future__ import annotations

import math

from kvbench.backends.cuda import cupy_module, kernel_module

SPIN_TIMEOUT_NS = 2_000_000_000  # the spin kernel gives up 2 s (GPU global timer) after it starts, unreleased
# Copies that may wait behind a spin kernel. Enqueued work beyond what the stream's queue holds
# blocks the host inside submission, and the host cannot release the gate from there: the
# kernel's timeout would end the wait, but the sample is lost. nvbandwidth queues 16 copies.
GATE_QUEUE_COPIES = 256


class SpinGate:
    """nvbandwidth's blocking kernel: `hold(stream)` queues a one-thread kernel that spins until
    the host calls `release()`, so work enqueued behind it starts together and host submission
    never enters a window timed from behind it. One flag in pinned host memory can hold streams on
    every GPU (pinned memory is visible to all devices under unified addressing)."""

    def __init__(self) -> None:
        import numpy as np

        cp = cupy_module()
        self._mem = cp.cuda.alloc_pinned_memory(8)
        self._flag = np.frombuffer(self._mem, dtype=np.int32, count=2)  # [release, gave up]
        self._spins: dict[int, object] = {}

    def arm(self) -> None:
        self._flag[:] = 0

    def hold(self, stream, device: int) -> None:
        """Queue the spin kernel on `stream` of `device` (the caller has made `device` current)."""
        cp = cupy_module()
        if device not in self._spins:
            self._spins[device] = kernel_module("spin", device).get_function("spin_until")
        self._spins[device]((1,), (1,), (cp.uint64(self._mem.ptr), cp.uint64(SPIN_TIMEOUT_NS)), stream=stream)

    def release(self) -> None:
        self._flag[0] = 1

    def check(self, loops: int) -> None:
        """After the held work finished: raise if a spin kernel gave up before the release."""
        if self._flag[1]:
            raise RuntimeError(f"the spin kernel gave up ({SPIN_TIMEOUT_NS / 1e9:g} s) before the host had enqueued "
                               f"{loops} operations behind it: submission is too slow for this window")


def pad_loops(loops: int, fraction: float) -> int:
    """Untimed operations to enqueue after `loops` timed ones."""
    return math.ceil(loops * fraction)


def max_padded_loops(queue_depth: int, fraction: float) -> int:
    """The most timed operations (at least 1) whose padding still fits `queue_depth` enqueued operations."""
    loops = max(1, int(queue_depth / (1 + fraction)))
    while loops > 1 and loops + pad_loops(loops, fraction) > queue_depth:
        loops -= 1
    return loops


def gate_plan(copies_per_op: int, pad_fraction: float = 0.0) -> tuple[bool, int]:
    """(gated, most operations per sample) for operations of `copies_per_op` copies on each stream:
    behind the spin kernel while timed and padding copies fit `GATE_QUEUE_COPIES`, else ungated."""
    per_op = max(1, copies_per_op)
    if per_op > GATE_QUEUE_COPIES:
        return False, 1 << 16
    return True, max_padded_loops(GATE_QUEUE_COPIES // per_op, pad_fraction)


class CudaEventTimer:
    """CUDA events around `loops` operations enqueued behind a spin kernel (nvbandwidth's trick).

    The operations only enqueue work on `stream` (and `side_streams`); the spin kernel holds the
    stream while they are submitted, so host submission never enters the window. The flag is
    always released, and the kernel gives up by itself after `SPIN_TIMEOUT_NS`.

    `copies_per_op` is how many copies one operation enqueues (a CUDA graph of every fragment, a
    batched memcpy): at most `GATE_QUEUE_COPIES` copies wait behind the gate, so `loops` is capped
    to fit; an operation larger than that is timed *ungated* (events around the operations as they
    are submitted, `name` says so): its window then holds whatever its submission costs beyond
    the copies, which for a batched submission is part of what is measured.

    With `pad_fraction`, every stream gets that fraction more operations after its timed ones,
    untimed: a stream that finishes its share first keeps loading the link while the others
    finish theirs (both directions of a bidirectional copy stay contended for the whole window).
    """

    def __init__(self, stream, device: int = 0, side_streams: tuple = (), flush=None, while_busy=None,
                 pad_fraction: float = 0.0, copies_per_op: int = 1) -> None:
        """`side_streams` start with `stream`; the window closes when every stream has done its
        timed operations. `flush` is enqueued before the window opens (an L2 flush); `while_busy`
        is called on the host while the GPU runs the sample (to read the link under load)."""
        cp = cupy_module()
        self.stream = stream
        self.device = device
        self.side_streams = tuple(side_streams)
        self.flush = flush
        self.while_busy = while_busy
        self.pad_fraction = pad_fraction
        streams = (stream, *self.side_streams)
        self.gated, self.max_loops = gate_plan(copies_per_op, pad_fraction)
        self.name = "cuda_events" if self.gated else "cuda_events_ungated"
        self.last_stream_s: list[float] = []  # each stream's timed operations done (main first), last call
        self.last_busy_s: list[float] = []  # each stream's padding done, last call (= last_stream_s unpadded)
        self.last_loops = 0
        self.on_window = None  # called with (start, end) events of each timed window once complete (a GPU load's hook)
        with cp.cuda.Device(device):  # events and the kernel belong to the streams' device
            self._gate = SpinGate()
            self._start = cp.cuda.Event()
            self._timed = [cp.cuda.Event() for _ in streams]  # each stream's timed operations done
            self._busy = [cp.cuda.Event() for _ in streams]  # each stream's padding done

    @property
    def resolution_s(self) -> float:
        return 0.5e-6  # CUDA event resolution is about half a microsecond

    def overhead_s(self, loops: int) -> float:
        return 0.0  # submission happens before the window opens (ungated: it is the operation's own cost)

    def time(self, op, loops: int) -> float:
        cp = cupy_module()
        streams, timed, busy = (self.stream, *self.side_streams), self._timed, self._busy
        self._gate.arm()
        try:
            with cp.cuda.Device(self.device):
                if self.flush is not None:
                    self.flush()
                if self.gated:
                    self._gate.hold(self.stream, self.device)
                self._start.record(self.stream)
                for side in self.side_streams:
                    side.wait_event(self._start)  # every stream starts when the spin ends
                for _ in range(loops):
                    op()
                for stream, event in zip(streams, timed, strict=True):
                    event.record(stream)
                for _ in range(pad_loops(loops, self.pad_fraction)):
                    op()
                for stream, event in zip(streams, busy, strict=True):
                    event.record(stream)
        finally:
            self._gate.release()
        if self.while_busy is not None:
            self.while_busy()
        for event in busy:
            event.synchronize()
        self._gate.check(loops + pad_loops(loops, self.pad_fraction))
        self.last_loops = loops
        self.last_stream_s = [cp.cuda.get_elapsed_time(self._start, e) * 1e-3 for e in timed]
        self.last_busy_s = [cp.cuda.get_elapsed_time(self._start, e) * 1e-3 for e in busy]
        if self.on_window is not None:
            self.on_window(self._start, timed[self.last_stream_s.index(max(self.last_stream_s))])
        return max(self.last_stream_s)


class AllGpusEventTimer:
    """Every GPU's stream held behind its own spin kernel, all released by one host write, with CUDA
    events around `loops` operations on each (nvbandwidth's multi-GPU tests): the GPUs start
    together and host submission enters no window.

    Events on different GPUs cannot be compared, so a sample's time is the slowest GPU's own
    window (the GPUs' releases differ by the flag's propagation, a microsecond); each GPU's own
    time of the last sample is kept in `last_gpu_s`.
    """

    name = "cuda_events_all_gpus"
    max_loops = 256
    resolution_s = 0.5e-6

    def __init__(self, streams: dict[int, object], while_busy=None) -> None:
        """`streams`: one stream per GPU, by CUDA device number; `while_busy` is called on the host
        while the GPUs run the sample (to read every link under load)."""
        cp = cupy_module()
        self.streams = dict(streams)
        self.while_busy = while_busy
        self.last_gpu_s: dict[int, float] = {}
        # every sample's seconds per operation on each GPU's own events, in order (the engine's samples
        # are the last ones): each direction's own rate, as nvbandwidth times each stream alone
        self.per_op_gpu_s: list[dict[int, float]] = []
        self._gate = SpinGate()
        self._events = {}
        for gpu in self.streams:
            with cp.cuda.Device(gpu):
                self._events[gpu] = (cp.cuda.Event(), cp.cuda.Event())

    def overhead_s(self, loops: int) -> float:
        return 0.0  # submission happens before the windows open

    def time(self, op, loops: int) -> float:
        cp = cupy_module()
        self._gate.arm()
        try:
            for gpu, stream in self.streams.items():
                with cp.cuda.Device(gpu):
                    self._gate.hold(stream, gpu)
                    self._events[gpu][0].record(stream)
            for _ in range(loops):
                op()
            for gpu, stream in self.streams.items():
                with cp.cuda.Device(gpu):
                    self._events[gpu][1].record(stream)
        finally:
            self._gate.release()
        if self.while_busy is not None:
            self.while_busy()
        for _start, end in self._events.values():
            end.synchronize()
        self._gate.check(loops)
        self.last_gpu_s = {gpu: cp.cuda.get_elapsed_time(start, end) * 1e-3 for gpu, (start, end) in self._events.items()}
        self.per_op_gpu_s.append({gpu: seconds / loops for gpu, seconds in self.last_gpu_s.items()})
        return max(self.last_gpu_s.values())
