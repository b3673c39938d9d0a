"""Pinned host memory and device memory through cupy (needs a CUDA device)."""

from __future__ import annotations

import numpy as np

from kvbench.backends.cuda import cuda_unavailable_reason, cupy_module, settle
from kvbench.errors import BadInput
from kvbench.memory import numa
from kvbench.memory.region import Region


def allocate(kind: str, size_bytes: int, index: int | None) -> Region:
    cp = cupy_module()
    gpu = index or 0
    count = cp.cuda.runtime.getDeviceCount()
    if gpu >= count:
        raise BadInput(f"bad memory '{kind}:{gpu}': this host has GPUs 0..{count - 1}")
    with cp.cuda.Device(gpu):
        if kind == "pinned":
            memory = cp.cuda.alloc_pinned_memory(size_bytes)
            array = np.frombuffer(memory, dtype=np.uint8, count=size_bytes)
            array.fill(0)
            node, unknown = numa.node_of(int(array.ctypes.data), size_bytes)
            facts = {"gpu": gpu, **({"numa_unknown": unknown} if unknown else {})}
            return Region("pinned", size_bytes, array, numa_node=node, facts=facts, _release=lambda: None)
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
