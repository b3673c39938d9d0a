"""cupy.cuda.runtime as the kvbench GPU stand-in answers it (TEST ONLY: numpy, no GPU)."""

from __future__ import annotations

from gpu_standin.machine import CudaError, Op, copy_bytes, machine

CUDARuntimeError = CudaError
cudaDevAttrCanUseHostPointerForRegisteredMem = 91
cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault = (
    0, 1, 2, 3, 4)
_SIDES = {0: ("host", "host"), 1: ("host", "device"), 2: ("device", "host"), 3: ("device", "device"),
          4: ("any", "any")}


def runtimeGetVersion() -> int:
    return 13000


def driverGetVersion() -> int:
    return 13000


def getDeviceCount() -> int:
    return len(machine().gpus)


def getDevice() -> int:
    return machine().device()


def setDevice(device: int) -> None:
    machine().set_device(device)


def getDeviceProperties(device: int) -> dict:
    m = machine()
    m.check_index(device)
    gpu = m.gpus[device]
    return {"name": gpu.name.encode(), "multiProcessorCount": gpu.sms, "l2CacheSize": gpu.l2_bytes,
            "totalGlobalMem": gpu.total_bytes, "pciBusID": 0x17 + device, "major": 9, "minor": 0}


def deviceGetAttribute(attribute: int, device: int) -> int:
    machine().check_index(device)
    if attribute == cudaDevAttrCanUseHostPointerForRegisteredMem:
        return 1
    raise CudaError(f"the stand-in does not answer device attribute {attribute}")


def memGetInfo() -> tuple[int, int]:
    m = machine()
    return m.free_bytes(m.device()), m.gpus[m.device()].total_bytes


def _copy_op(dst: int, src: int, size: int, kind: int):
    m = machine()
    src_side, dst_side = _SIDES[kind]

    def run() -> None:
        copy_bytes(m, m.view(dst, size, dst_side), m.view(src, size, src_side))

    m.view(dst, size, dst_side), m.view(src, size, src_side)  # a bad pointer fails at the call, as CUDA's does
    return Op(run, "memcpy")


def memcpyAsync(dst: int, src: int, size: int, kind: int, stream: int) -> None:
    m = machine()
    m.stream_by_ptr(stream).enqueue(_copy_op(dst, src, size, kind))


def memcpy(dst: int, src: int, size: int, kind: int) -> None:
    """Synchronous: on the legacy default stream, returns when the bytes have moved."""
    m = machine()
    stream = m.null_stream()
    stream.enqueue(_copy_op(dst, src, size, kind))
    stream.synchronize()


def memsetAsync(ptr: int, value: int, size: int, stream: int) -> None:
    m = machine()
    m.view(ptr, size, "device")

    def run() -> None:
        target = m.view(ptr, size, "device")
        m.touch(target, "write")
        target[:] = value

    m.stream_by_ptr(stream).enqueue(Op(run, "memset"))


def hostRegister(ptr: int, size: int, flags: int) -> None:
    machine().register_host(ptr, size)


def hostUnregister(ptr: int) -> None:
    machine().unregister_host(ptr)


def deviceSynchronize() -> None:
    machine().synchronize_device()


def deviceCanAccessPeer(device: int, peer: int) -> int:
    """Every stand-in GPU can reach every other (peer copies are numpy copies in one process)."""
    m = machine()
    m.check_index(device)
    m.check_index(peer)
    return int(device != peer and m.gpu_links != "none")


def deviceEnablePeerAccess(peer: int, flags: int = 0) -> None:
    """The current device may now reach `peer`'s memory; twice is an error, as in CUDA."""
    m = machine()
    m.check_index(peer)
    pair = (m.device(), peer)
    if peer == m.device():
        raise CudaError("cudaErrorInvalidDevice: a device is not its own peer")
    if not deviceCanAccessPeer(m.device(), peer):
        raise CudaError("cudaErrorPeerAccessUnsupported")
    if pair in m.peer_access:
        raise CudaError("cudaErrorPeerAccessAlreadyEnabled")
    m.peer_access.add(pair)


def memcpyPeerAsync(dst: int, dst_device: int, src: int, src_device: int, size: int, stream: int) -> None:
    """A copy between two GPUs' memory in `stream`'s order; each pointer must be device memory of the
    device named beside it."""
    m = machine()
    for ptr, device in ((dst, dst_device), (src, src_device)):
        alloc = m.find(ptr, size)
        if alloc is None or alloc.kind != "device" or alloc.device != device:
            raise CudaError(f"cudaErrorInvalidValue: {size} bytes at {ptr:#x} are not device {device}'s memory")

    def run() -> None:
        copy_bytes(m, m.view(dst, size, "device"), m.view(src, size, "device"))

    m.stream_by_ptr(stream).enqueue(Op(run, "memcpy_peer"))
