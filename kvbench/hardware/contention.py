"""Contention: what else the box did while a case ran, recorded with the case and judged once.

`watch(gpu_bus_ids)` wraps the timed part of a case; its `record()` is the result's `contention`
metadata: the host's facts (kvbench/hardware/proc_load.py), each of the case's GPUs' facts
(kvbench/hardware/nvml_watch.py), and `contended` — the reasons, in words, that the case was
measured under contention (empty: clean). The thresholds are all here, in `LIMITS`
(docs/contention.md explains each). A fault seen on a GPU (an ECC error, an XID) is listed
under `faults`: it is not contention, but the result carries it as a warning.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kvbench.hardware import nvml_watch, proc_load
from kvbench.hardware.facts import HostFacts
from kvbench.hardware.nvml import nvml_session

# A case is contended when, over its timed part, any of these is exceeded.
LIMITS = {
    "others_cpu_fraction": 0.10,  # other processes' (and the kernel's) CPU time over all CPUs' time
    "steal_fraction": 0.02,  # CPU time the hypervisor gave to other guests
    "cpu_some": 0.10,  # PSI: share of wall time some runnable task waited for a CPU
    "memory_some": 0.05,  # PSI: share of wall time some task stalled on memory (reclaim, swap-in)
    "gpu_thermal_held_fraction": 0.05,  # NVML: share of the case a GPU's clocks were held down for heat
}
# Throttle reasons that make a case contended: the GPU slowed for heat or a hardware signal. The card's own
# power cap under the measured load (sw_power_cap) is what the box does, so it is recorded, not judged.
THROTTLED = ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
# Recorded, not judged: iowait and I/O pressure (a storage case causes its own), the load average
# (a one-minute average lags the case) and runnable tasks (one instant), the CPU clocks (the governor
# is `kvbench doctor`'s to check).

GPU_SEGMENTS = ("gpu_link", "gpu_link_both", "gpu_compute", "hbm", "hbm_copy")  # (kind, CUDA number)
PEER_SEGMENTS = ("gpu_peer", "gpu_peer_both")  # (kind, source CUDA number, destination CUDA number): gpu.p2p


def contended(host: dict[str, Any], gpus: dict[str, dict[str, Any]]) -> list[str]:
    """The reasons, in words, that facts gathered over a case show contention; [] when none."""
    out = []
    if host.get("others_cpu_fraction", 0) > LIMITS["others_cpu_fraction"]:
        busiest = ", ".join(f"{p['name']} ({p['cpus']:.2f} CPU)" for p in host.get("busiest_others", []))
        out.append(f"other processes used {host['others_cpu_fraction']:.0%} of the CPUs"
                   + (f" ({host['others_cpus']:.2f} of {host['cpus']})" if "others_cpus" in host else "")
                   + (f": {busiest}" if busiest else ""))
    if host.get("steal_fraction", 0) > LIMITS["steal_fraction"]:
        out.append(f"the hypervisor stole {host['steal_fraction']:.0%} of the CPU time")
    pressure = host.get("pressure") or {}
    for name, what in (("cpu_some", "waiting for a CPU"), ("memory_some", "stalled on memory")):
        if pressure.get(name, 0) > LIMITS[name]:
            out.append(f"tasks were {what} {pressure[name]:.0%} of the time (PSI)")
    for bus, gpu in gpus.items():
        others = gpu.get("other_processes") or []
        if others:
            out.append(f"GPU {bus}: {len(others)} other process(es) on it (pid {', '.join(str(p['pid']) for p in others)})")
        throttled = [r for r in gpu.get("throttle_reasons") or [] if r in THROTTLED]
        if throttled:
            out.append(f"GPU {bus}: clocks throttled ({', '.join(throttled)})")
        held = gpu.get("thermal_held_fraction", 0)
        if held > LIMITS["gpu_thermal_held_fraction"]:
            out.append(f"GPU {bus}: clocks held down for heat {held:.0%} of the case")
    return out


def faults(gpus: dict[str, dict[str, Any]]) -> list[str]:
    """GPU faults during the case: uncorrected ECC errors and XID errors."""
    out = []
    for bus, gpu in gpus.items():
        if gpu.get("ecc_uncorrected_delta", 0) > 0:
            out.append(f"GPU {bus}: {gpu['ecc_uncorrected_delta']} uncorrected ECC error(s)")
        if gpu.get("xids"):
            out.append(f"GPU {bus}: XID {', '.join(str(x) for x in gpu['xids'])}")
    return out


def case_gpus(path: Sequence[tuple], facts: HostFacts) -> list[str]:
    """NVML bus ids of the GPUs a case's path crosses (every visible GPU for `all_gpu_links`)."""
    if any(seg and seg[0] == "all_gpu_links" for seg in path):
        return [g.bus_id for g in facts.visible_gpus() if g.bus_id]
    out = []
    for seg in path:
        kind = seg[0] if seg else None
        numbers = seg[1:3] if kind in PEER_SEGMENTS else seg[1:2] if kind in GPU_SEGMENTS else ()
        for number in (n for n in numbers if isinstance(n, int)):
            gpu = facts.gpu(number)
            if gpu is not None and gpu.bus_id and gpu.bus_id not in out:
                out.append(gpu.bus_id)
    return out


@dataclass
class Seen:
    """Facts over one watched stretch; `record()` once it has ended."""

    host: dict[str, Any] = field(default_factory=dict)
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    # readings that failed, in words ("GPUs at the start: NVMLError_Unknown: ..."): recorded, never a silent gap
    failed: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The result's `contention` metadata; `reading_failed` names each reading that failed."""
        return {"contended": contended(self.host, self.gpus), "faults": faults(self.gpus), "host": self.host,
                **({"gpus": self.gpus} if self.gpus else {}), **({"reading_failed": self.failed} if self.failed else {})}


@contextmanager
def watch(gpu_bus_ids: Sequence[str] = (), root: str = "/") -> Iterator[Seen]:
    """Read the host (and the named GPUs through NVML, where there is a driver) before and after the
    block; the facts are in the yielded `Seen` once the block has ended, whether or not it raised.
    A reading that fails the way readings fail (NVML's own error, an OS error; a kernel file that does not
    parse) is recorded as failed in `Seen.failed`; any other exception (a wrong argument list, a bug) raises,
    so the case fails instead of being stored `ok` without its GPU reading."""
    seen = Seen()
    with nvml_session() if gpu_bus_ids else _nothing() as nvml:
        nvml_faults = _nvml_faults(nvml)
        gpu_watch = (_reading(seen, "GPUs at the start", nvml_faults, lambda: nvml_watch.start(nvml, list(gpu_bus_ids)))
                     if nvml is not None else None)
        start_s = time.monotonic()
        before = _reading(seen, "host at the start", HOST_FAULTS, lambda: proc_load.snapshot(start_s, root))
        try:
            yield seen
        finally:
            end_s = time.monotonic()
            after = _reading(seen, "host at the end", HOST_FAULTS, lambda: proc_load.snapshot(end_s, root))
            if before is not None and after is not None:
                seen.host = _reading(seen, "host load", HOST_FAULTS,
                                     lambda: proc_load.host_load(before, after, os.getpid(), root)) or {}
            if gpu_watch is not None:
                family = proc_load.family(after.processes, os.getpid()) if after is not None else {os.getpid()}
                seen.gpus = _reading(seen, "GPUs at the end", nvml_faults,
                                     lambda: nvml_watch.finish(gpu_watch, end_s - start_s, family)) or {}


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


HOST_FAULTS: tuple[type[BaseException], ...] = (OSError, ValueError)  # a /proc file missing or not as expected


def _nvml_faults(nvml: Any) -> tuple[type[BaseException], ...]:
    """The exceptions an NVML reading fails with: pynvml's `NVMLError` (NotSupported, Unknown, GPU lost, ...)
    and OS errors (the library, the device files); never TypeError, AttributeError and the like."""
    if nvml is None:
        return (OSError,)
    error = getattr(nvml, "NVMLError", None)
    if not (isinstance(error, type) and issubclass(error, BaseException)):
        import pynvml

        error = pynvml.NVMLError
    return (error, OSError)


def _reading(seen: Seen, what: str, faults: tuple[type[BaseException], ...], read: Callable[[], Any]) -> Any:
    """read(), or None with the failure recorded in `seen` where it raised one of `faults`."""
    try:
        return read()
    except faults as exc:
        seen.failed.append(f"{what}: {type(exc).__name__}: {exc}")
        return None
