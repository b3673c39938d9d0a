"""Host memory a GPU copies from: `pinned` (cudaHostAlloc), `pageable`, or `numa:N` page-locked in
place with cudaHostRegister (portable, mapped), so a buffer bound to a node can feed a GPU."""

from __future__ import annotations

from kvbench.backends.cuda import cupy_module
from kvbench.memory.cuda_memory import REGISTER_FLAGS
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.region import Region


def host_buffer(memory: str, size: int) -> tuple[Region, bool]:
    """(region, registered): `pinned` (cudaHostAlloc), `pageable`, or `numa:N` page-locked in place
    with cudaHostRegister (portable, mapped); closing the region unregisters it."""
    cp = cupy_module()
    region = allocate(memory, size)
    if parse_kind(memory).name != "numa":
        return region, False
    try:
        cp.cuda.runtime.hostRegister(region.address, size, REGISTER_FLAGS)
    except BaseException:
        region.close()
        raise
    address = region.address
    region.release_first(lambda: cp.cuda.runtime.hostUnregister(address))
    return region, True
