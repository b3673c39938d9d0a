"""Whether CUDA can be used here, and why not; cupy is imported only when asked."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from contextlib import ExitStack
from types import ModuleType

from kvbench.hardware import optional


def driver_missing_reason() -> str | None:
    """Why no NVIDIA driver can be used here (its library does not load), None when it loads.

    Asked first, so that a host without a driver says so, not cupy's "CUDA driver version is
    insufficient", which is what the runtime reports when it finds no driver at all."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver on this host (libcuda.so.1 cannot be loaded)"
    return None


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """None when cupy can reach at least one CUDA device, else the reason in one line."""
    driver = driver_missing_reason()
    if driver:
        return f"no CUDA device: {driver}"
    try:
        cupy = optional.load("cupy")
    except ImportError as exc:
        return "no CUDA device: " + optional.why(exc, "cupy is not installed (install the cu12 or cu13 extra on a GPU host)")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises CUDARuntimeError/ CUDADriverError without a driver
        return f"no CUDA device: {_first_line(exc)}"
    if count == 0:
        return "no CUDA device: the driver reports 0 devices"
    return None


def device_count() -> int:
    """How many CUDA devices this process sees; 0 where CUDA is unavailable."""
    if cuda_unavailable_reason():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def cupy_module() -> ModuleType:
    """The cupy module; raises `RuntimeError` with the reason when CUDA is unavailable."""
    reason = cuda_unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    import cupy

    return cupy


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


# What kernel_module hands NVRTC; tests compile every kernel with them on a host without a GPU.
KERNEL_OPTIONS = ("-std=c++17",)


@functools.cache
def kernel_module(name: str, device: int = 0):
    """The cupy RawModule compiled (NVRTC) from kernels/NAME.cu for `device`."""
    from kvbench.input_files import kernels_dir

    cp = cupy_module()
    with cp.cuda.Device(device):  # compiled and loaded now, on `device` (cupy would do it at first use)
        module = cp.RawModule(code=(kernels_dir() / f"{name}.cu").read_text(), options=KERNEL_OPTIONS)
        module.compile()
        return module


def make_current(device: int) -> Callable[[], None]:
    """Make `device` the current CUDA device for the case being prepared; returns what puts the
    previous one back (call it from the case's `close`).

    cupy launches kernels, allocates and fills on the *current* device, and the engine calls a
    workload's run/reset/check outside any `with Device(...)`; setting it once per case keeps
    the timed loop free of a context switch per operation (nvbandwidth sets it per testcase).
    """
    cp = cupy_module()
    previous = cp.cuda.runtime.getDevice()
    cp.cuda.runtime.setDevice(device)
    return lambda: cp.cuda.runtime.setDevice(previous)


def free_pools() -> None:
    """Hand cupy's cached device and pinned blocks back to the driver: its pools keep every block a
    case freed (several GiB by the end of a full GPU stage) until asked. Called as a case closes."""
    cp = cupy_module()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def pci_bus_id(device: int) -> str | None:
    """CUDA device `device`'s PCI bus id ("0000:17:00.0"), None without CUDA."""
    if cuda_unavailable_reason():
        return None
    import cupy

    return cupy.cuda.Device(device).pci_bus_id


def link_probe(gpu: int):
    """NVML's view of CUDA device `gpu`'s link for one case (hardware.gpu_link.LinkProbe), found by
    the bus id CUDA gives it."""
    from kvbench.hardware.gpu_link import LinkProbe

    return LinkProbe(pci_bus_id(gpu), gpu)


def gpu_numa_node(gpu: int) -> int | None:
    """The NUMA node NVML says CUDA device `gpu` hangs off, None when unknown."""
    from kvbench.hardware.gpu_link import gpu_numa_node as by_bus

    return by_bus(pci_bus_id(gpu), gpu)


def cuda_index_by_bus() -> dict[str, int]:
    """CUDA device numbers by PCI address (sysfs spelling); {} without CUDA. CUDA's numbering
    follows CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, NVML's does not."""
    from kvbench.hardware.sysfs import normalize_bdf

    return {normalize_bdf(pci_bus_id(i)): i for i in range(device_count())}


def settle(device: int) -> None:
    """Wait until the work cupy queued on GPU `device`'s current stream has run: its uploads
    (`asarray`), `zeros`, `ones` and fills all go on the legacy default stream, which a case's
    non-blocking streams (and every stream of another GPU) do not wait for. Called once a case's
    buffers are made, so whatever stream uses them first finds their bytes there."""
    cp = cupy_module()
    with cp.cuda.Device(device):
        cp.cuda.get_current_stream().synchronize()


def upload(host, device: int):
    """`host` (a numpy array) copied into a new cupy array on GPU `device`, landed before this
    returns: cupy 14's `asarray` copies asynchronously (blocking=False) on the current stream, and a
    case's first copy or kernel may run on another GPU's non-blocking stream that nothing orders
    after it. Every GPU benchmark uploads through this."""
    cp = cupy_module()
    with cp.cuda.Device(device):
        array = cp.asarray(host)
    settle(device)
    return array


def hold(stack: ExitStack, *arrays: object) -> None:
    """Keep `arrays` (cupy arrays a workload reaches by address only) until the case's `stack`
    closes. An array freed while its address is still in use sends its block back to cupy's pool,
    which hands it to the next allocation of its size: every launch would read memory cupy considers
    free. Release comes after the callbacks registered later (a case's synchronizes) have run."""
    held = list(arrays)
    stack.callback(held.clear)


def launch_shape(device: int = 0, threads: int = 512) -> tuple[int, int]:
    """(blocks, threads): a multiple of the SM count, several blocks per SM for latency hiding."""
    cp = cupy_module()
    sms = cp.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]
    return sms * 4, threads
