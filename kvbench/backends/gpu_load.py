"""A kernel kept running beside timed copies: what a serving engine's compute does to its KV
loads, and what the loads do to its compute.

`GpuLoad(kind, gpu)` times its kernel alone first, then `start()` keeps launching it on its own
non-blocking stream (a few launches in flight, each bracketed by CUDA events) until `stop()`,
which returns the kernel's median time alone and under load and their ratio. "Under load" counts
only the launches at least half inside a timed copy window (`note_window`, the copy timer's hook):
the load also runs while copies are verified and reset, beside nothing. `hbm`: a 16-byte
vector copy over 2 × 256 MiB (HBM-bound); `gemm`: an fp16 4096³ matrix product (cuBLAS,
tensor cores). `pause()` holds the launches and waits for those in flight, `resume()` launches
again and returns once one is enqueued: the copies' "alone" side, interleaved with the loaded one in
the same case (benches/under_load.py).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from kvbench.backends.cuda import cupy_module, kernel_module, launch_shape, settle

KINDS = ("hbm", "gemm")
HBM_BYTES = 256 << 20
GEMM_N = 4096
ALONE_LAUNCHES = 20
IN_FLIGHT = 4
HANG_S = 600.0  # pause/resume/stop wait at most this long for the load's thread: a bound on a hang, not a timing


class GpuLoad:
    def __init__(self, kind: str, gpu: int) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown load '{kind}'")
        cp = cupy_module()
        self.cp, self.kind, self.gpu = cp, kind, gpu
        with cp.cuda.Device(gpu):
            self.stream = cp.cuda.Stream(non_blocking=True)
            if kind == "hbm":
                src, dst = cp.ones(HBM_BYTES, dtype=cp.uint8), cp.empty(HBM_BYTES, dtype=cp.uint8)
                copy = kernel_module("hbm", gpu).get_function("vector_copy")
                grid, block = launch_shape(gpu)

                def launch() -> None:
                    copy((grid,), (block,), (src, dst, cp.uint64(HBM_BYTES // 16)), stream=self.stream)
            else:
                a = cp.ones((GEMM_N, GEMM_N), dtype=cp.float16)
                b = cp.ones((GEMM_N, GEMM_N), dtype=cp.float16)
                c = cp.empty((GEMM_N, GEMM_N), dtype=cp.float16)

                def launch() -> None:
                    with self.stream:
                        cp.matmul(a, b, out=c)
            settle(gpu)  # ones() fills on the legacy stream, which self.stream does not wait for
            self._launch = launch
            self._launch()  # compiled / planned before anything is timed
            self.stream.synchronize()
            self.alone_ms = [self._timed_once() for _ in range(ALONE_LAUNCHES)]
        self._launches: list[tuple[float, float]] = []  # (start, end) of each launch under load, ms after the anchor
        self._windows: list[tuple[float, float]] = []  # (start, end) of each timed copy window, ms after the anchor
        self._anchor = None
        self._stop = threading.Event()
        self._paused = threading.Event()  # set: launch nothing new
        self._held = threading.Event()  # the thread's answer to a pause: every launch in flight has finished
        self._launched = threading.Event()  # the thread's answer to a resume: a launch is enqueued again
        self._go = threading.Event()  # cleared by a pause, set by resume and stop: what a held thread sleeps on
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _bracketed(self):
        start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record(self.stream)
        self._launch()
        end.record(self.stream)
        return start, end

    def _timed_once(self) -> float:
        start, end = self._bracketed()
        end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(start, end))

    def _since_anchor(self, event) -> float:
        return float(self.cp.cuda.get_elapsed_time(self._anchor, event))

    def note_window(self, start, end) -> None:
        """A timed copy window of this GPU just ended (both events complete): the copy timer's hook.
        Only launches inside such windows count as "under load"; a window timed while paused (the
        copies alone) is none of them."""
        if self._paused.is_set():
            return
        self._windows.append((self._since_anchor(start), self._since_anchor(end)))

    def start(self) -> None:
        """Keep the kernel running until `stop()`, in a thread of its own."""
        with self.cp.cuda.Device(self.gpu):
            self._anchor = self.cp.cuda.Event()
            self._anchor.record(self.stream)  # every time here is measured from it, on this GPU's clock
            self._anchor.synchronize()

        def loop() -> None:
            try:
                with self.cp.cuda.Device(self.gpu):
                    pending = []
                    while not self._stop.is_set():
                        if self._paused.is_set():
                            for start, end in pending:
                                self._finished(start, end)
                            pending = []
                            self._held.set()
                            self._go.wait(0.05)  # asleep, not polling: resume and stop set it
                            continue
                        pending.append(self._bracketed())
                        self._launched.set()
                        if len(pending) >= IN_FLIGHT:
                            self._finished(*pending.pop(0))
                    for start, end in pending:
                        self._finished(start, end)
            except BaseException as exc:  # reported by stop(), which the case's thread calls
                self._error = exc

        self._thread = threading.Thread(target=loop, name="kvbench-gpu-load", daemon=True)
        self._thread.start()

    def _await(self, event: threading.Event, what: str) -> None:
        waited = 0.0
        while not event.wait(0.05):
            waited += 0.05
            if self._error is not None or self._thread is None or not self._thread.is_alive() or waited > HANG_S:
                raise RuntimeError(f"the {self.kind} load did not {what}: {self._error or 'its thread ended'}")

    def pause(self) -> None:
        """Launch nothing new and return once every launch in flight has finished: the GPU runs the
        copies alone until `resume()`."""
        self._held.clear()
        self._go.clear()
        self._paused.set()
        self._await(self._held, "pause")

    def resume(self) -> None:
        """Launch again; returns once a launch is enqueued, so the next copies run beside it."""
        self._launched.clear()
        self._paused.clear()
        self._go.set()
        self._await(self._launched, "resume")

    def _finished(self, start, end) -> None:
        end.synchronize()
        self._launches.append((self._since_anchor(start), self._since_anchor(end)))

    def stop(self) -> dict[str, Any]:
        """End the load; its kernel's median time alone and under load (ms), and the slowdown."""
        if self._thread is not None:
            self._stop.set()
            self._go.set()
            self._thread.join(HANG_S)  # it ends once its launches in flight have: a kernel that never does holds it
            alive, self._thread = self._thread.is_alive(), None
            if alive:
                raise RuntimeError(f"the {self.kind} load did not stop within {HANG_S:g} s: a launch of it never "
                                   "finished")
        if self._error is not None:
            raise RuntimeError(f"the {self.kind} load failed: {self._error}") from self._error
        alone = float(np.median(self.alone_ms))
        inside = in_windows(self._launches, self._windows)
        under = float(np.median(inside)) if inside else None
        return {"kind": self.kind, "kernel_alone_ms": alone, "kernel_under_load_ms": under,
                "kernel_slowdown": under / alone if under and alone else None, "launches": len(self._launches),
                "launches_in_copy_windows": len(inside), "copy_windows": len(self._windows),
                **({} if self._windows else {"note": "the copies were timed on the host clock: no timed window to "
                                                     "place the kernel's launches in, so none counts as under load"})}


def in_windows(launches: list[tuple[float, float]], windows: list[tuple[float, float]]) -> list[float]:
    """The durations (ms) of the launches at least half inside one of the copy windows (all times in
    ms on one clock): the kernel's time *under load*. Launches while the copies were being verified,
    reset or not yet started ran beside nothing and are left out."""
    inside = []
    for start, end in launches:
        length = end - start
        overlap = max((min(end, w_end) - max(start, w_start) for w_start, w_end in windows), default=0.0)
        if length > 0 and overlap >= 0.5 * length:
            inside.append(length)
    return inside
