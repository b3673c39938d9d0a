"""`load=none|hbm|gemm`: copies timed while a kernel runs beside them on another stream (see
backends/gpu_load.py). The copy's GB/s is the result; the kernel's time alone and under load, and
their ratio, go in its `load` metadata — both sides of overlapping KV loads with compute, from one
case. GPU only: without CUDA the case is skipped with the reason."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvbench.benches.base import Prepared
from kvbench.benches.params import Param
from kvbench.errors import BadInput

LOAD = Param("choice", "none", "a kernel running beside the copies on another stream: none, hbm (an HBM-bound "
             "copy kernel) or gemm (fp16 matrix products)", choices=("none", "hbm", "gemm"), added=True)


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
