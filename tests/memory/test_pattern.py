"""The fill pattern: every byte depends on its position and on the seed, and none is ever the
poison that resets write, so a skipped, misplaced or stale byte is always visible."""

import numpy as np
import pytest

from kvbench.memory.pattern import POISON, fill_pattern, first_difference, first_poison_byte, pattern_bytes, poison


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


# Lengths around the kernels' 8-byte words and 1 MiB chunks: loose bytes at the end, a single word, none.
LENGTHS = [0, 1, 7, 8, 9, 4096, 4097, (1 << 20) - 1, 1 << 20, (3 << 20) + 5]


@pytest.mark.parametrize("n", LENGTHS)
def test_first_difference_finds_the_first_differing_byte_wherever_it_is(n):
    a = pattern_bytes(n, seed=1)
    assert first_difference(a, a.copy()) is None
    for i in sorted({0, n // 2, n // 8 * 8 - 1, n // 8 * 8, n - 1} & set(range(n))):
        b = a.copy()
        b[i] ^= 0x01
        b[n - 1] ^= 0x80 if i < n - 1 else 0  # a later difference too: the first is named
        assert first_difference(a, b) == i, (n, i)


@pytest.mark.parametrize("n", LENGTHS)
def test_first_poison_byte_finds_the_first_poison_and_nothing_else(n):
    a = pattern_bytes(n, seed=2)
    assert first_poison_byte(a) is None
    for i in sorted({0, n // 2, n // 8 * 8 - 1, n // 8 * 8, n - 1} & set(range(n))):
        b = a.copy()
        b[i] = POISON
        b[n - 1] = POISON
        assert first_poison_byte(b) == i, (n, i)


def test_first_poison_byte_does_not_take_a_neighbouring_value_for_the_poison():
    near = np.full(1 << 20, POISON - 1, dtype=np.uint8)
    near[::3], near[::5], near[::7] = POISON + 1, POISON ^ 0x80, 0
    assert first_poison_byte(near) is None


def test_first_difference_refuses_arrays_of_different_lengths():
    with pytest.raises(ValueError):
        first_difference(np.zeros(8, np.uint8), np.zeros(9, np.uint8))
