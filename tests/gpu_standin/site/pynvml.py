"""NVML (nvidia-ml-py) as the kvbench GPU stand-in answers it: TEST ONLY. Fixed, labelled facts
about the simulated GPUs (a PCIe 5.0 x16 link, clocks); nothing read from hardware."""

from __future__ import annotations

from dataclasses import dataclass

from gpu_standin.machine import machine

NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_TOPOLOGY_INTERNAL, NVML_TOPOLOGY_SINGLE, NVML_TOPOLOGY_MULTIPLE = 0, 10, 20
NVML_TOPOLOGY_HOSTBRIDGE, NVML_TOPOLOGY_NODE, NVML_TOPOLOGY_SYSTEM = 30, 40, 50


class NVMLError(Exception):
    def __init__(self, value: int = 999) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


@dataclass
class _Handle:
    index: int


@dataclass
class _PciInfo:
    busId: str
    pciDeviceId: int


@dataclass
class _Memory:
    total: int
    free: int
    used: int


_inits = 0


def nvmlInit() -> None:
    global _inits
    _inits += 1


def nvmlShutdown() -> None:
    global _inits
    if _inits <= 0:
        raise NVMLError(1)  # NVML_ERROR_UNINITIALIZED
    _inits -= 1


def _gpu(handle: _Handle):
    if _inits <= 0:
        raise NVMLError(1)
    return machine().gpus[handle.index]


def nvmlDeviceGetCount() -> int:
    return len(machine().gpus)


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    if not 0 <= index < len(machine().gpus):
        raise NVMLError(2)
    return _Handle(index)


def nvmlDeviceGetHandleByPciBusId(bus_id) -> _Handle:
    text = (bus_id.decode() if isinstance(bus_id, bytes) else bus_id).upper()
    for gpu in machine().gpus:
        if gpu.bus_id.upper().endswith(text[-12:]):
            return _Handle(gpu.index)
    raise NVMLError(6)  # NVML_ERROR_NOT_FOUND


def nvmlDeviceGetPciInfo(handle: _Handle) -> _PciInfo:
    return _PciInfo(_gpu(handle).bus_id, _gpu(handle).pci_device_id)


def nvmlDeviceGetName(handle: _Handle) -> str:
    return _gpu(handle).name


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    return _gpu(handle).uuid


def nvmlDeviceGetSerial(handle: _Handle) -> str:
    return _gpu(handle).board_serial


def nvmlDeviceGetMemoryInfo(handle: _Handle) -> _Memory:
    gpu = _gpu(handle)
    free = machine().free_bytes(gpu.index)
    return _Memory(gpu.total_bytes, free, gpu.total_bytes - free)


def nvmlDeviceGetNumaNodeId(handle: _Handle) -> int:
    _gpu(handle)
    return 0


def nvmlDeviceGetCurrPcieLinkGeneration(handle: _Handle) -> int:
    _gpu(handle)
    return 5


nvmlDeviceGetMaxPcieLinkGeneration = nvmlDeviceGetCurrPcieLinkGeneration


def nvmlDeviceGetCurrPcieLinkWidth(handle: _Handle) -> int:
    _gpu(handle)
    return 16


nvmlDeviceGetMaxPcieLinkWidth = nvmlDeviceGetCurrPcieLinkWidth


def nvmlDeviceGetPcieReplayCounter(handle: _Handle) -> int:
    _gpu(handle)
    return 0


def nvmlDeviceGetClockInfo(handle: _Handle, clock: int) -> int:
    _gpu(handle)
    return {NVML_CLOCK_SM: 1980, NVML_CLOCK_MEM: 3201}.get(clock, 1980)


nvmlDeviceGetMaxClockInfo = nvmlDeviceGetClockInfo


def nvmlDeviceGetMemoryBusWidth(handle: _Handle) -> int:
    _gpu(handle)
    return 5120


def nvmlDeviceGetTopologyCommonAncestor(a: _Handle, b: _Handle) -> int:
    _gpu(a), _gpu(b)
    return NVML_TOPOLOGY_SINGLE


# NVLink as the machine's `gpu_links` says: "nvswitch" gives every GPU 18 active links to an NVSwitch
# (NVML's version figure 4); otherwise no link is active, and peer-to-peer is "pcie" or "none".
NVML_NVLINK_MAX_LINKS = 18
NVML_FEATURE_DISABLED, NVML_FEATURE_ENABLED = 0, 1
NVML_NVLINK_DEVICE_TYPE_GPU, NVML_NVLINK_DEVICE_TYPE_SWITCH = 0, 2
NVML_P2P_CAPS_INDEX_READ, NVML_P2P_STATUS_OK, NVML_P2P_STATUS_NOT_SUPPORTED = 0, 0, 5
SWITCH_BUS_ID = "00000000:F0:00.0"


def _link(handle: _Handle, link: int) -> None:
    _gpu(handle)
    if not 0 <= link < NVML_NVLINK_MAX_LINKS:
        raise NVMLError(2)  # NVML_ERROR_INVALID_ARGUMENT


def nvmlDeviceGetNvLinkState(handle: _Handle, link: int) -> int:
    _link(handle, link)
    return NVML_FEATURE_ENABLED if machine().gpu_links == "nvswitch" else NVML_FEATURE_DISABLED


def nvmlDeviceGetNvLinkVersion(handle: _Handle, link: int) -> int:
    _link(handle, link)
    return 4


def nvmlDeviceGetNvLinkRemoteDeviceType(handle: _Handle, link: int) -> int:
    _link(handle, link)
    return NVML_NVLINK_DEVICE_TYPE_SWITCH


def nvmlDeviceGetNvLinkRemotePciInfo(handle: _Handle, link: int) -> _PciInfo:
    _link(handle, link)
    return _PciInfo(SWITCH_BUS_ID, 0x000022A3)


def nvmlDeviceGetP2PStatus(a: _Handle, b: _Handle, index: int) -> int:
    _gpu(a), _gpu(b)
    return NVML_P2P_STATUS_NOT_SUPPORTED if machine().gpu_links == "none" or a.index == b.index else NVML_P2P_STATUS_OK


def nvmlSystemGetDriverVersion() -> str:
    return "580.00-standin"


def nvmlSystemGetCudaDriverVersion() -> int:
    return 13000


# What kvbench's contention watch and `doctor` read (kvbench/hardware/nvml_watch.py, doctor.py). The
# simulated GPUs have no other processes and no throttling; what the stand-in cannot simulate (energy,
# violation time, temperature, power) is not supported, as on GPUs whose NVML lacks a field, so kvbench
# leaves those facts out; the health counters below are too unless a test asks for them.
def nvmlDeviceGetComputeRunningProcesses(handle: _Handle) -> list:
    _gpu(handle)
    return []


nvmlDeviceGetGraphicsRunningProcesses = nvmlDeviceGetComputeRunningProcesses


def nvmlDeviceGetCurrentClocksThrottleReasons(handle: _Handle) -> int:
    _gpu(handle)
    return 0 if getattr(machine(), "health", None) is None else int(_fault(handle, "throttle", 0))


nvmlDeviceGetCurrentClocksEventReasons = nvmlDeviceGetCurrentClocksThrottleReasons


def _not_supported(*args) -> None:
    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


nvmlDeviceGetTotalEnergyConsumption = nvmlDeviceGetViolationStatus = _not_supported
nvmlDeviceGetTemperature = nvmlDeviceGetPowerUsage = _not_supported


# Health counters (kvbench/hardware/nvml_watch.py, judged by kvbench/analyze/accept/health.py): unsupported, as
# above, unless a test sets `machine().health` to a dict, which makes them supported and clean except the
# faults it names — "xid": an XID raised on GPU 0 during the case; "ecc_uncorrected", "nvlink_crc" (CRC flit),
# "nvlink_crc_data", "nvlink_replay", "nvlink_recovery": how much each read of that counter grows (so a case
# sees a delta); "row_remap_pending", "row_remap_failed": True; "throttle": reason bits; "persistence": False;
# "xid_events": "not_supported" (NVML refuses to register XID events, as a VM may). A fault named `KIND@D`
# happens on GPU D alone (an XID too), the others stay clean. A test-made fault, never a measurement.
NVML_ERROR_TIMEOUT = 10
NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY = 0, 1
NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA = 2, 3
_NVLINK_FAULTS = {NVML_NVLINK_ERROR_DL_REPLAY: "nvlink_replay", NVML_NVLINK_ERROR_DL_RECOVERY: "nvlink_recovery",
                  NVML_NVLINK_ERROR_DL_CRC_FLIT: "nvlink_crc", NVML_NVLINK_ERROR_DL_CRC_DATA: "nvlink_crc_data"}
_reads: dict[tuple, int] = {}


def _health(handle: _Handle | None = None) -> dict:
    if handle is not None:
        _gpu(handle)
    health = getattr(machine(), "health", None)
    if health is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return health


def _fault(handle: _Handle, name: str, default=None):
    """The fault `name` on this GPU: `name@index` where a test scoped it to one GPU, else `name` (every GPU)."""
    health = _health(handle)
    if any(k.startswith(f"{name}@") for k in health):
        return health.get(f"{name}@{handle.index}", default)
    return health.get(name, default)


def _growing(key: tuple, step: int) -> int:
    """A counter that grows by `step` at every read (a fault that keeps happening)."""
    _reads[key] = _reads.get(key, 0) + step
    return _reads[key]


def nvmlDeviceGetTotalEccErrors(handle: _Handle, error_type: int, counter_type: int) -> int:
    step = _fault(handle, "ecc_uncorrected", 0) if error_type == 1 else 0
    return _growing(("ecc", id(machine()), handle.index, error_type), step)


def nvmlDeviceGetNvLinkErrorCounter(handle: _Handle, link: int, counter: int) -> int:
    _link(handle, link)
    step = _fault(handle, _NVLINK_FAULTS[counter], 0) if link == 0 else 0
    return _growing(("nvlink", id(machine()), handle.index, link, counter), step)


def nvmlDeviceGetRemappedRows(handle: _Handle) -> tuple[int, int, int, int]:
    """(corrected rows, uncorrected rows, a remap pending, a remap failed)."""
    pending, failed = bool(_fault(handle, "row_remap_pending")), bool(_fault(handle, "row_remap_failed"))
    return (0, int(pending or failed), int(pending), int(failed))


def nvmlDeviceGetRetiredPagesPendingStatus(handle: _Handle) -> int:
    return int(bool(_fault(handle, "row_remap_pending")))


def nvmlDeviceGetPersistenceMode(handle: _Handle) -> int:
    return int(_fault(handle, "persistence", True))


@dataclass
class _EventData:
    device: _Handle
    eventType: int
    eventData: int


@dataclass
class _EventSet:
    pending: list


def nvmlEventSetCreate() -> _EventSet:
    _health()
    return _EventSet([])


def nvmlDeviceRegisterEvents(handle: _Handle, types: int, events: _EventSet) -> None:
    health = _health(handle)
    if _fault(handle, "xid_events") == "not_supported":  # a VM that does not deliver XID events
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    xid = health.get(f"xid@{handle.index}", health.get("xid") if handle.index == 0 else None)
    if xid is not None:
        events.pending.append(_EventData(handle, types, int(xid)))


def nvmlEventSetWait_v2(events: _EventSet, timeout_ms: int) -> _EventData:
    if not events.pending:
        raise NVMLError(NVML_ERROR_TIMEOUT)
    return events.pending.pop(0)


def nvmlEventSetFree(events: _EventSet) -> None:
    events.pending.clear()
