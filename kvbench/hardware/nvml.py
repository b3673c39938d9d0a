"""GPU facts through NVML (nvidia-ml-py). Without a driver the reason is returned, not raised."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from kvbench.hardware import optional
from kvbench.hardware.facts import Gpu, Link
from kvbench.hardware.sysfs import normalize_bdf


@contextmanager
def nvml_session() -> Iterator[ModuleType | None]:
    """pynvml, initialised for the block; None without nvidia-ml-py or a driver."""
    try:
        pynvml = optional.load("pynvml")  # a broken or hanging nvidia-ml-py is "no NVML", bounded in time
        pynvml.nvmlInit()
    except Exception:
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def call(fn, *args):
    """fn(*args), or None where NVML answers with an error (`pynvml.NVMLError`: NotSupported,
    NoPermission, ... for a field this GPU or driver does not have). Anything else (a wrong argument,
    a bug in the caller) is not a missing field: it raises, so a test sees it instead of a field
    silently disappearing."""
    import pynvml

    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


def text(value) -> str:
    """NVML's bytes or str as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def read_gpus(cuda_index: dict[str, int] | None = None) -> tuple[tuple[Gpu, ...], str | None]:
    """(GPUs, None) or ((), why NVML could not be read). `cuda_index`: CUDA's device number by PCI
    address (sysfs spelling), which NVML does not know (it numbers GPUs in bus order)."""
    try:
        pynvml = optional.load("pynvml")
    except ImportError as exc:
        return (), optional.why(exc, "nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return (), f"no NVIDIA driver: {type(exc).__name__}: {exc}"
    cuda_index = cuda_index or {}
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            pci = call(pynvml.nvmlDeviceGetPciInfo, h)
            memory = call(pynvml.nvmlDeviceGetMemoryInfo, h)
            gpus.append(Gpu(
                index=i,
                name=text(pynvml.nvmlDeviceGetName(h)),
                uuid=text(pynvml.nvmlDeviceGetUUID(h)),
                bus_id=text(pci.busId) if pci else "",
                numa_node=call(pynvml.nvmlDeviceGetNumaNodeId, h) if hasattr(pynvml, "nvmlDeviceGetNumaNodeId") else None,
                link=Link(
                    gen=call(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
                    width=call(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
                    max_gen=call(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                    max_width=call(pynvml.nvmlDeviceGetMaxPcieLinkWidth, h),
                ),
                memory_bytes=int(memory.total) if memory else None,
                bus_width_bits=call(pynvml.nvmlDeviceGetMemoryBusWidth, h),
                max_memory_clock_mhz=call(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_MEM),
                pci_device_id=f"{pci.pciDeviceId:#010x}" if pci else None,
                cuda_index=cuda_index.get(normalize_bdf(text(pci.busId))) if pci else None,
                serial=_serial(pynvml, h),
            ))
        return tuple(gpus), None
    finally:
        pynvml.nvmlShutdown()


def _serial(pynvml: ModuleType, handle) -> str | None:
    """The board's serial number, None where NVML does not give one (consumer boards, older drivers)."""
    value = call(pynvml.nvmlDeviceGetSerial, handle) if hasattr(pynvml, "nvmlDeviceGetSerial") else None
    return text(value).strip() or None if value is not None else None


def driver_versions() -> dict:
    """Driver and CUDA driver API versions, empty without NVML."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return {}
        cuda = call(pynvml.nvmlSystemGetCudaDriverVersion)
        return {
            "nvidia_driver": text(call(pynvml.nvmlSystemGetDriverVersion)),
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        }


def replay_counters() -> dict[str, int]:
    """Each GPU's PCIe replay counter by PCI bus id, {} without NVML (read at a run's start and end)."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return {}
        out = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            pci, count = call(pynvml.nvmlDeviceGetPciInfo, h), call(pynvml.nvmlDeviceGetPcieReplayCounter, h)
            if pci is not None and count is not None:
                out[text(pci.busId)] = int(count)
        return out
