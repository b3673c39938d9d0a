"""What a case's GPUs went through while it ran, read through NVML before and after it.

`start` takes the counters (ECC errors, NVLink data-link errors, throttle time, energy) and registers
for XID events; `finish` reads the clocks, throttle reasons, temperature and power as the case ends,
rows remapped (and whether a remap is pending), persistence mode, the other processes on each GPU,
and the differences (kvbench/analyze/accept/health.py judges them as DCGM-class health rules). The NVML module (`nv`) is passed in (pynvml, or a fake in
tests). A field NVML does not support on a GPU is left out, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kvbench.hardware.nvml import call as _call
from kvbench.hardware.nvml import text as _text

# NVML's clock throttle (event) reason bits; the same values in every driver since they were added.
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
    0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks",
    0x200: "board_limit", 0x400: "reliability",
}
_XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
_MEMORY_CORRECTED, _MEMORY_UNCORRECTED, _VOLATILE = 0, 1, 0
_POLICY = {"power": 0, "thermal": 1}  # NVML_PERF_POLICY_*: time the clocks were held down, ns
# NVML_NVLINK_ERROR_DL_*: the data-link error counters of each NVLink, summed over a GPU's active links
_NVLINK_ERRORS = {"nvlink_replay": 0, "nvlink_recovery": 1, "nvlink_crc_flit": 2, "nvlink_crc_data": 3}
_NVLINK_LINKS = 18  # NVML_NVLINK_MAX_LINKS (NVLink 4)


@dataclass
class Watch:
    """The counters at the start of a case, per GPU bus id, and the XID event set."""

    nv: ModuleType
    handles: dict[str, Any]
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    events: Any = None
    # bus ids whose XID events NVML refused to deliver (NotSupported on some VMs and vGPUs): no count there
    no_xid_events: set[str] = field(default_factory=set)


def _counters(nv: ModuleType, handle: Any) -> dict[str, int]:
    out = {
        "ecc_corrected": _call(nv.nvmlDeviceGetTotalEccErrors, handle, _MEMORY_CORRECTED, _VOLATILE),
        "ecc_uncorrected": _call(nv.nvmlDeviceGetTotalEccErrors, handle, _MEMORY_UNCORRECTED, _VOLATILE),
        "energy_mj": _call(nv.nvmlDeviceGetTotalEnergyConsumption, handle),
    }
    for name, policy in _POLICY.items():
        violation = _call(nv.nvmlDeviceGetViolationStatus, handle, policy)
        if violation is not None:
            out[f"{name}_held_ns"] = int(violation.violationTime)
    out.update(_nvlink_errors(nv, handle))
    return {k: int(v) for k, v in out.items() if v is not None}


def _nvlink_errors(nv: ModuleType, handle: Any) -> dict[str, int]:
    """Each NVLink data-link error counter summed over the GPU's active links, and `nvlink_active`: how
    many links are active (0 is a fact: a GPU without NVLink, or none trained); {} where NVML has no
    NVLink calls."""
    if not hasattr(nv, "nvmlDeviceGetNvLinkErrorCounter"):
        return {}
    out: dict[str, int] = {"nvlink_active": 0}
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", _NVLINK_LINKS)):
        if _call(nv.nvmlDeviceGetNvLinkState, handle, link) != 1:  # NVML_FEATURE_ENABLED
            continue
        out["nvlink_active"] += 1
        for name, counter in _NVLINK_ERRORS.items():
            value = _call(nv.nvmlDeviceGetNvLinkErrorCounter, handle, link, counter)
            if value is not None:
                out[name] = out.get(name, 0) + int(value)
    return out


def _memory_health(nv: ModuleType, handle: Any) -> dict[str, Any]:
    """Rows remapped for uncorrectable errors and whether a remap waits for a GPU reset (A100 and later),
    else whether retired pages wait for one (older GPUs); persistence mode. Unsupported: left out."""
    out: dict[str, Any] = {}
    rows = _call(nv.nvmlDeviceGetRemappedRows, handle) if hasattr(nv, "nvmlDeviceGetRemappedRows") else None
    if rows is not None:
        _corrected, uncorrected, pending, failed = (int(x) for x in rows)
        out.update(rows_remapped_uncorrectable=uncorrected, row_remap_pending=bool(pending),
                   row_remap_failed=bool(failed))
    elif hasattr(nv, "nvmlDeviceGetRetiredPagesPendingStatus"):
        pending = _call(nv.nvmlDeviceGetRetiredPagesPendingStatus, handle)
        if pending is not None:
            out["row_remap_pending"] = bool(pending)
    persistence = _call(nv.nvmlDeviceGetPersistenceMode, handle) if hasattr(nv, "nvmlDeviceGetPersistenceMode") else None
    if persistence is not None:
        out["persistence"] = bool(persistence)
    return out


def start(nv: ModuleType, bus_ids: list[str]) -> Watch:
    """Counters of each GPU in `bus_ids` (NVML's spelling) now, and XID events from now on."""
    handles = {b: h for b in bus_ids if (h := _call(nv.nvmlDeviceGetHandleByPciBusId, b)) is not None}
    watch = Watch(nv, handles, {b: _counters(nv, h) for b, h in handles.items()})
    events = _call(nv.nvmlEventSetCreate)
    if events is not None:
        registered = 0
        for bus, handle in handles.items():
            try:
                nv.nvmlDeviceRegisterEvents(handle, _XID_EVENT, events)
                registered += 1
            except _nvml_error():  # XID events need a driver and a GPU that report them (not every VM does)
                watch.no_xid_events.add(bus)
        if registered:
            watch.events = events
        else:
            _call(nv.nvmlEventSetFree, events)
    return watch


def _xids(watch: Watch) -> dict[str, list[int]]:
    """XID errors raised since `start`, by bus id; the event set is freed."""
    out: dict[str, list[int]] = {}
    if watch.events is None:
        return out
    nv = watch.nv
    bus_of = {id(h): b for b, h in watch.handles.items()}
    for _ in range(64):  # a storm of XIDs is cut at 64: the first ones say what broke
        try:
            event = nv.nvmlEventSetWait_v2(watch.events, 0)
        except _nvml_error():  # NVMLError_Timeout: no more events
            break
        pci = _call(nv.nvmlDeviceGetPciInfo, event.device)
        bus = _text(pci.busId) if pci is not None else bus_of.get(id(event.device), "?")
        out.setdefault(bus, []).append(int(event.eventData))
    _call(nv.nvmlEventSetFree, watch.events)
    return out


def _nvml_error() -> type[Exception]:
    import pynvml

    return pynvml.NVMLError


def _others(nv: ModuleType, handle: Any, family: set[int]) -> list[dict[str, Any]]:
    """Processes on the GPU that are not this one or its children (compute and graphics)."""
    seen: dict[int, dict[str, Any]] = {}
    for getter in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
        for proc in _call(getter, handle) or []:
            if proc.pid not in family:
                used = getattr(proc, "usedGpuMemory", None)
                seen[proc.pid] = {"pid": int(proc.pid), **({"memory_bytes": int(used)} if isinstance(used, int) else {})}
    return sorted(seen.values(), key=lambda p: p["pid"])


def _reasons(nv: ModuleType, handle: Any) -> list[str] | None:
    bits = _call(nv.nvmlDeviceGetCurrentClocksEventReasons if hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons")
                 else nv.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
    return None if bits is None else [name for bit, name in THROTTLE_BITS.items() if int(bits) & bit]


def finish(watch: Watch, seconds: float, family: set[int]) -> dict[str, dict[str, Any]]:
    """Per GPU bus id: clocks (MHz), throttle reasons, temperature (°C) and power (W) as the case
    ends; the other processes on it; over the case, ECC errors and XIDs raised, the share of its
    `seconds` the clocks were held down for power or heat, and the mean power (W)."""
    nv, xids, out = watch.nv, _xids(watch), {}
    sm, mem = getattr(nv, "NVML_CLOCK_SM", 1), getattr(nv, "NVML_CLOCK_MEM", 2)
    for bus, handle in watch.handles.items():
        power_mw = _call(nv.nvmlDeviceGetPowerUsage, handle)
        facts: dict[str, Any] = {
            "sm_mhz": _call(nv.nvmlDeviceGetClockInfo, handle, sm),
            "sm_max_mhz": _call(nv.nvmlDeviceGetMaxClockInfo, handle, sm),
            "memory_mhz": _call(nv.nvmlDeviceGetClockInfo, handle, mem),
            "throttle_reasons": _reasons(nv, handle),
            "temperature_c": _call(nv.nvmlDeviceGetTemperature, handle, getattr(nv, "NVML_TEMPERATURE_GPU", 0)),
            "power_w": round(power_mw / 1000, 1) if power_mw is not None else None,
            "other_processes": _others(nv, handle, family),
            # no event set (a driver or vGPU that reports no XIDs): no count, never "none seen"
            "xids": xids.get(bus, []) if watch.events is not None and bus not in watch.no_xid_events else None,
            # False: NVML refused this GPU's XID events (a VM's or vGPU's limit, or a fault: accept decides)
            "xid_events": False if bus in watch.no_xid_events else None,
        }
        facts.update(_memory_health(nv, handle))
        then, now = watch.counters.get(bus, {}), _counters(nv, handle)
        if "nvlink_active" in now:
            facts["nvlink_active"] = now["nvlink_active"]
        for key in ("ecc_corrected", "ecc_uncorrected", *_NVLINK_ERRORS):
            if key in then and key in now:
                facts[f"{key}_delta"] = now[key] - then[key]
        if seconds > 0:
            for name in _POLICY:
                key = f"{name}_held_ns"
                if key in then and key in now:
                    facts[f"{name}_held_fraction"] = round(min(max((now[key] - then[key]) / (seconds * 1e9), 0.0), 1.0), 4)
            if "energy_mj" in then and "energy_mj" in now:
                facts["mean_power_w"] = round((now["energy_mj"] - then["energy_mj"]) / 1000 / seconds, 1)
        out[bus] = {k: v for k, v in facts.items() if v is not None}
    return out
