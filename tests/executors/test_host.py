"""The host executors against the numpy oracle, on random descriptor lists."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvbench.errors import BadInput
from kvbench.executors import get_executor
from kvbench.executors.host import HostExecutor
from kvbench.kv.descriptors import DescriptorList, apply_numpy
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import fill_pattern

SIZE = 1 << 16


@st.composite
def descriptor_lists(draw):
    """Random non-overlapping destination pieces, sources anywhere (overlaps allowed)."""
    cuts = sorted(draw(st.sets(st.integers(1, SIZE - 1), min_size=1, max_size=64)))
    bounds = [0, *cuts, SIZE]
    pieces = [(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
    keep = draw(st.lists(st.booleans(), min_size=len(pieces), max_size=len(pieces)))
    rows = [(draw(st.integers(0, SIZE - n)), d, n) for (d, n), k in zip(pieces, keep, strict=True) if k]
    if not rows:
        rows = [(0, 0, SIZE)]
    order = draw(st.permutations(range(len(rows))))
    rows = [rows[i] for i in order]
    return DescriptorList.from_arrays(*(np.array(c, dtype=np.uint64) for c in zip(*rows, strict=True)))


@pytest.fixture(scope="module")
def regions():
    src, dst = allocate("pageable", SIZE), allocate("pageable", SIZE)
    fill_pattern(src.host_array, seed=7)
    yield src, dst
    src.close()
    dst.close()


@pytest.mark.parametrize("executor,threads", [
    (HostExecutor(0), 1), (HostExecutor(0), 2), (HostExecutor(1000), 2), (get_executor("host-numpy"), 2),
])
@settings(max_examples=40, deadline=None)
@given(descriptors=descriptor_lists())
def test_executor_matches_the_numpy_oracle_byte_for_byte(regions, executor, threads, descriptors):
    src, dst = regions
    dst.host_array.fill(0)
    expected = np.zeros(SIZE, dtype=np.uint8)
    apply_numpy(descriptors, src.host_array, expected)
    executor.bind(src, dst, descriptors, threads=threads)()
    assert np.array_equal(dst.host_array, expected)


def test_executor_refuses_a_bad_descriptor_list(regions):
    src, dst = regions
    with pytest.raises(BadInput, match="past the destination"):
        get_executor("host").bind(src, dst, DescriptorList.contiguous(SIZE, dst_offset=1))


def test_unknown_executor_suggests_the_closest_name():
    with pytest.raises(BadInput, match="did you mean 'host'"):
        get_executor("hots")


def test_too_many_threads_is_bad_input(regions):
    src, dst = regions
    with pytest.raises(BadInput, match="threads=999"):
        get_executor("host").bind(src, dst, DescriptorList.contiguous(SIZE), threads=999)
