"""Pinned host memory and device memory through cupy (needs a CUDA device).

Pinned memory of base pages is cudaHostAlloc's, as `torch.empty(..., pin_memory=True)` gives a
serving engine; pinned memory of huge pages (`pages=thp|hugetlb-*`) is mapped with that page size,
touched, then page-locked in place with cudaHostRegister (portable, mapped), as an engine that
registers its own pool does (SGLang's host KV pool, NIXL's DRAM registration)."""

from __future__ import annotations

import numpy as np

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module, settle
from kvbench.errors import BadInput
from kvbench.memory import numa, pages
from kvbench.memory.region import Region

# cudaHostRegisterPortable | cudaHostRegisterMapped: usable from every GPU, and by kernels
REGISTER_FLAGS = 1 | 2


def allocate(kind: str, size_bytes: int, index: int | None) -> Region:
    cp = cupy_module()
    gpu = index or 0
    count = cp.cuda.runtime.getDeviceCount()
    if gpu >= count:
        raise BadInput(f"bad memory '{kind}:{gpu}': this host has GPUs 0..{count - 1}")
    with cp.cuda.Device(gpu):
        if kind == "pinned":
            return _pinned(cp, gpu, size_bytes)
        free, _total = cp.cuda.runtime.memGetInfo()
        if size_bytes > 0.9 * free:
            raise BadInput(f"buffer of {size_bytes} bytes is larger than 90% of GPU {gpu}'s {free} free bytes")
        device_array = cp.zeros(size_bytes, dtype=cp.uint8)
        settle(gpu)  # zeros() is a memset on the legacy stream: done before a case's own streams write it
        return Region(f"device:{gpu}", size_bytes, None, device_array=device_array, facts={"gpu": gpu})


def check_gpu(gpu: int, size_bytes: int, given: str | None = None) -> None:
    """BadInput for a GPU index that does not exist or a buffer above 90 % of its free memory;
    `given` is the input the index came from as the user wrote it (default `gpu=N`; `dst=device:3`).

    Checked only where CUDA works; elsewhere the case is skipped with the driver's reason.
    """
    if cuda_unavailable_reason():
        return
    cp = cupy_module()
    count = cp.cuda.runtime.getDeviceCount()
    if gpu >= count:
        raise BadInput(f"bad {given or f'gpu={gpu}'}: this host has GPUs 0..{count - 1}")
    with cp.cuda.Device(gpu):
        free, _total = cp.cuda.runtime.memGetInfo()
    if size_bytes > 0.9 * free:
        raise BadInput(f"bad size: {size_bytes} bytes on GPU {gpu} exceed 90% of its {free} free bytes")


def _pinned(cp, gpu: int, size_bytes: int) -> Region:
    """Page-locked host memory of the case's page size (see the module's docstring)."""
    asked = pages.asked()
    if asked == "base":
        memory = cp.cuda.alloc_pinned_memory(size_bytes)
        array = np.frombuffer(memory, dtype=np.uint8, count=size_bytes)
        array.fill(0)
        huge, read = pages.smaps_huge_bytes(int(array.ctypes.data), size_bytes)
        backing = {"pages": "base", "huge_fraction": round(min(1.0, huge / size_bytes), 4) if read and size_bytes else None,
                   "huge_page_bytes": None, "pinned_by": "cudaHostAlloc"}
        release = lambda: None  # noqa: E731 - cupy's pinned pool frees it with the last view
    else:
        mapping = pages.HostMapping(size_bytes, asked)
        array = mapping.array
        try:
            array.fill(0)
            backing = {**mapping.backing(), "pinned_by": "cudaHostRegister"}
            cp.cuda.runtime.hostRegister(mapping.address, size_bytes, REGISTER_FLAGS)
        except BaseException:
            mapping.close()
            raise
        address = mapping.address

        def release() -> None:
            try:
                cp.cuda.runtime.hostUnregister(address)
            finally:
                mapping.close()

    node, unknown = numa.node_of(int(array.ctypes.data), size_bytes)
    facts = {"gpu": gpu, **({"numa_unknown": unknown} if unknown else {}), **backing}
    region = Region("pinned", size_bytes, array, numa_node=node, facts=facts, _release=release)
    pages.list_buffer(region.describe())
    return region
