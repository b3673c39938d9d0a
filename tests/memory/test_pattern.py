"""The fill pattern: every byte depends on its position and on the seed, and none is ever the
poison that resets write, so a skipped, misplaced or stale byte is always visible."""

import numpy as np
import pytest

from kvbench.memory.pattern import POISON, fill_pattern, pattern_bytes, poison


@pytest.mark.parametrize("seed", [0, 1, 11, 1000, 2**40 + 3])
def test_no_pattern_byte_is_ever_the_poison(seed):
    data = pattern_bytes(1 << 20, seed=seed)
    assert not (data == POISON).any()
    assert (data[:8] != 0).any()  # the old pattern's word 0 was the seed itself: bytes 1-7 zero


def test_every_byte_lane_depends_on_position():
    words = pattern_bytes(8 * 4096, seed=5).reshape(-1, 8)
    for lane in range(8):  # no byte position of a word is constant along the buffer
        assert len(np.unique(words[:, lane])) > 200


def test_every_byte_depends_on_the_seed():
    a, b = pattern_bytes(1 << 16, seed=0), pattern_bytes(1 << 16, seed=1)
    assert (a != b).mean() > 0.99


def test_any_slice_can_be_rebuilt_from_its_offset():
    whole = pattern_bytes(10_000, seed=3)
    for start, length in ((0, 10_000), (8, 17), (4096, 5000), (9992, 8)):
        assert np.array_equal(pattern_bytes(length, seed=3, offset=start), whole[start:start + length])
    with pytest.raises(ValueError, match="multiple of 8"):
        fill_pattern(np.empty(4, dtype=np.uint8), offset=3)


def test_poison_fills_every_byte():
    data = pattern_bytes(100)
    poison(data)
    assert (data == POISON).all()
