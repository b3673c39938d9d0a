"""`load=none|hbm|gemm`: copies timed while a kernel runs beside them on another stream (see
backends/gpu_load.py). The copy's GB/s is the result; the kernel's time alone and under load, and
their ratio, go in its `load` metadata — both sides of overlapping KV loads with compute, from one
case. The same copies alone are the case's pair (`against {"load": "none"}`): their samples are
taken with the load paused, interleaved with the loaded ones (A B, B A, ...), so the copy's rate
under load over alone is a ratio per pair of samples (metadata `paired`), not two cases' medians.
A case under load pairs with itself alone only: its other ratios (pageable over pinned, a KV strategy
over one contiguous copy) are measured in its `load=none` case. GPU only: without CUDA the case is
skipped with the reason."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvbench.benches.base import Prepared
from kvbench.errors import BadInput
from kvbench.measure.engine import Pair, Workload


def refuse_load(params: dict[str, Any], why: str | None) -> None:
    """`BadInput` when a load is asked for where it cannot run (`why`: the reason, None if it can)."""
    if params["load"] != "none" and why:
        raise BadInput(f"bad load={params['load']}: {why}")


def with_load(prepared: Prepared, kind: str, gpu: int) -> Prepared:
    """`prepared`, its copies timed while `kind` runs on GPU `gpu` from now until its figures are
    taken (before the case closes)."""
    if kind == "none":
        return prepared
    from kvbench.backends.gpu_load import GpuLoad

    try:
        load = GpuLoad(kind, gpu)
    except BaseException:
        prepared.close()
        raise
    if hasattr(prepared.workload.timer, "on_window"):  # CUDA events: the load learns each timed window
        prepared.workload.timer.on_window = load.note_window
    load.start()
    case = prepared.workload
    case.pair = Pair({"load": "none"}, Workload(case.bytes_per_op, case.run, case.reset, case.check,
                                                LoadPaused(case.timer, load), verify=case.verify))
    inner_derive, inner_close = prepared.derive, prepared.close

    def derive(m) -> dict[str, Any]:
        return {**inner_derive(m), "load": load.stop()}

    def close() -> None:
        try:
            load.stop()  # already stopped when the case measured; a load that failed failed the case then
        except RuntimeError:
            pass
        finally:
            inner_close()

    return replace(prepared, derive=derive, close=close)


class LoadPaused:
    """The case's own timer with the load paused around each sample: the copies alone. The timer's
    record of its last sample (each stream's window, the loops) is left as the loaded sample wrote it,
    so what the case derives from it (bidirectional rates) stays the loaded copies'."""

    KEPT = ("last_loops", "last_stream_s", "last_busy_s")

    def __init__(self, timer, load) -> None:
        self.timer, self.load = timer, load
        self.name = timer.name
        if hasattr(timer, "max_loops"):
            self.max_loops = timer.max_loops

    @property
    def resolution_s(self) -> float:
        return self.timer.resolution_s

    def overhead_s(self, loops: int) -> float:
        return self.timer.overhead_s(loops)

    def time(self, op, loops: int) -> float:
        kept = {k: getattr(self.timer, k) for k in self.KEPT if hasattr(self.timer, k)}
        self.load.pause()
        try:
            return self.timer.time(op, loops)
        finally:
            for k, v in kept.items():
                setattr(self.timer, k, v)
            self.load.resume()
