"""A region's lifecycle: zeroing, and release steps run in order when it closes."""

import numpy as np

from kvbench.memory.kinds import allocate
from kvbench.memory.region import Region


def test_a_release_step_runs_before_the_memory_is_freed_and_only_once():
    order = []
    region = Region("pageable", 16, np.ones(16, dtype=np.uint8), _release=lambda: order.append("free"))
    region.release_first(lambda: order.append("unregister"))
    region.close()
    region.close()
    assert order == ["unregister", "free"]


def test_the_memory_is_freed_even_when_the_step_fails():
    freed = []

    def unregister():
        raise RuntimeError("cudaErrorHostMemoryNotRegistered")

    region = Region("pageable", 16, np.ones(16, dtype=np.uint8), _release=lambda: freed.append(True))
    region.release_first(unregister)
    try:
        region.close()
    except RuntimeError:
        pass
    assert freed == [True]


def test_poison_fills_a_host_region_with_the_reset_value():
    from kvbench.memory.pattern import POISON

    with allocate("pageable", 4096) as region:
        region.host_array[:] = 7
        region.poison()
        assert (region.host_array == POISON).all()
