import numpy as np
import pytest

from kvbench.errors import BadInput
from kvbench.kv.descriptors import DESCRIPTOR_DTYPE, DescriptorList, apply_numpy


def test_contiguous_is_one_row():
    d = DescriptorList.contiguous(1 << 20)
    assert len(d) == 1 and d.total_bytes == 1 << 20
    assert d.rows.dtype == DESCRIPTOR_DTYPE


def test_fragments_cover_the_range_with_a_short_tail():
    d = DescriptorList.fragments(10_000, 4096)
    assert d.length.tolist() == [4096, 4096, 1808]
    assert d.src_offset.tolist() == [0, 4096, 8192]
    assert d.total_bytes == 10_000


def test_rows_are_read_only():
    d = DescriptorList.contiguous(64)
    with pytest.raises(ValueError):
        d.rows["length"][0] = 1


def test_validate_rejects_out_of_bounds_and_overlaps():
    DescriptorList.from_arrays([0, 0], [0, 64], [64, 64]).validate(64, 128)  # overlapping sources are fine
    with pytest.raises(BadInput, match="reads past the source"):
        DescriptorList.from_arrays([0], [0], [65]).validate(64, 128)
    with pytest.raises(BadInput, match="writes past the destination"):
        DescriptorList.from_arrays([0], [100], [64]).validate(64, 128)
    with pytest.raises(BadInput, match="overlapping destination"):
        DescriptorList.from_arrays([0, 0], [0, 32], [64, 64]).validate(64, 128)
    with pytest.raises(BadInput, match="length 0"):
        DescriptorList.from_arrays([0], [0], [0]).validate(64, 64)


def test_split_keeps_every_byte_in_place():
    rng = np.random.default_rng(1)
    src = rng.integers(0, 256, 1 << 16, dtype=np.uint8)
    d = DescriptorList.from_arrays([0, 5000], [30000, 0], [5000, 20000])
    pieces = d.split(3000)
    assert pieces.total_bytes == d.total_bytes
    assert pieces.length.max() <= 3000
    a, b = np.zeros_like(src), np.zeros_like(src)
    apply_numpy(d, src, a)
    apply_numpy(pieces, src, b)
    assert np.array_equal(a, b)


def test_split_even_gives_every_thread_work():
    d = DescriptorList.contiguous(1 << 20).split_even(4)
    assert len(d) >= 4
    assert d.total_bytes == 1 << 20
