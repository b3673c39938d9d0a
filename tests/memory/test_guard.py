"""Guard bytes around a destination and in the bytes no fragment writes (kvbench/memory/guard.py)."""

import re

import numpy as np
import pytest

from kvbench.errors import IntegrityError
from kvbench.memory.guard import GUARD_BYTES, GuardedRegion
from kvbench.memory.pattern import POISON


@pytest.fixture
def pool():
    """A 64 KiB destination whose fragments write [4 KiB, 8 KiB) and [16 KiB, 20 KiB) only."""
    with GuardedRegion("pageable", 64 << 10, np.array([16 << 10, 4 << 10]), np.array([4096, 4096])) as guarded:
        yield guarded


def test_every_byte_no_fragment_writes_is_a_guard_and_holds_the_poison_from_the_start(pool):
    assert pool.region.size_bytes == 64 << 10 and pool.region.address == pool.whole.address + GUARD_BYTES
    assert pool.guard_bytes == 2 * GUARD_BYTES + (64 << 10) - 8192
    assert (pool.whole.host_array == POISON).all()
    pool.region.host_array[4096:8192] = 1  # what the fragments write
    pool.region.host_array[16384:20480] = 2
    pool.check()


@pytest.mark.parametrize(("offset", "named"), [
    (-1, "the guard 1 byte(s) before the destination"),
    (64 << 10, "the guard 1 byte(s) past the destination's end"),
    (8192, "destination byte 8192, which no fragment writes"),
    (30000, "destination byte 30000, which no fragment writes"),
])
def test_a_byte_written_outside_the_fragments_is_named(pool, offset, named):
    pool.whole.host_array[GUARD_BYTES + offset] = 0x5A
    with pytest.raises(IntegrityError, match=f"outside every fragment was written: {re.escape(named)}.* holds 0x5a"):
        pool.check()
    pool.poison()
    pool.check()


def test_a_destination_the_fragments_cover_is_guarded_by_its_margins():
    with GuardedRegion("pageable", 8192) as whole:
        assert whole.guard_bytes == 2 * GUARD_BYTES
        whole.region.host_array[:] = 7
        whole.check()
        whole.whole.host_array[GUARD_BYTES + 8192] = 7
        with pytest.raises(IntegrityError, match="1 byte"):
            whole.check()


def test_the_compiled_check_finds_the_first_bad_byte_at_every_alignment():
    """It compares 8 bytes at a time with loose bytes around them: every edge is covered."""
    from kvbench.memory.pattern_kernels import first_not_poison

    data = np.full(61, POISON, dtype=np.uint8)  # not a multiple of 8 either
    for start in range(0, 20):
        for end in range(start, 61):
            ranges = (np.array([start]), np.array([end]))
            assert first_not_poison(data, *ranges) == -1
            for bad in {start, end - 1, (start + end) // 2} - {end} if end > start else ():
                data[bad] = 0x5A
                assert first_not_poison(data, *ranges) == bad, (start, end, bad)
                data[bad] = POISON
            data[:start] = 0  # bytes outside the ranges are not looked at
            data[end:] = 0
            assert first_not_poison(data, *ranges) == -1
            data[:] = POISON
