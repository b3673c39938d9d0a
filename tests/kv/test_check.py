"""The restore check (kv/check.py): the first bad row named whatever the rows' alignment and length,
a source holding the poison refused, long rows checked in pieces without losing their row."""

from __future__ import annotations

import numpy as np
import pytest

from kvbench.kv import check
from kvbench.kv.check import first_mismatch, unfilled_note
from kvbench.kv.descriptors import DescriptorList

POISON = 0xA5


def restored(rows: DescriptorList, size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    src[src == POISON] = 0x11  # no source byte holds the poison
    dst = np.full(size, POISON, dtype=np.uint8)
    for s, d, n in zip(rows.src_offset, rows.dst_offset, rows.length, strict=True):
        dst[d:d + n] = src[s:s + n]
    return src, dst


# word-aligned rows, rows at odd offsets, rows with loose bytes after their words, a one-byte row
LAYOUTS = {
    "aligned": DescriptorList.from_arrays(np.array([0, 4096, 8192]), np.array([8192, 0, 4096]),
                                          np.array([4096, 4096, 4096])),
    "odd": DescriptorList.from_arrays(np.array([3, 1001, 5000]), np.array([7, 2003, 9001]), np.array([997, 13, 3001])),
    "loose tail": DescriptorList.from_arrays(np.array([0, 1024]), np.array([2048, 4096]), np.array([1021, 1003])),
    "one byte": DescriptorList.from_arrays(np.array([5]), np.array([9]), np.array([1])),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_first_bad_row_is_named_at_any_byte_of_it(layout):
    rows = LAYOUTS[layout]
    src, dst = restored(rows, 16384)
    assert first_mismatch(rows, src, dst, POISON) is None
    for row in range(len(rows.length)):
        d, n = int(rows.dst_offset[row]), int(rows.length[row])
        for byte in {0, n // 2, n - 1}:
            bad = dst.copy()
            bad[d + byte] ^= 0x40
            last = int(rows.dst_offset[-1] + rows.length[-1] - 1)
            if row < len(rows.length) - 1:
                bad[last] ^= 0x01  # a later row wrong too: the first is named
            assert first_mismatch(rows, src, bad, POISON) == row, (layout, row, byte)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_source_holding_the_poison_fails_its_row_though_the_bytes_match(layout):
    rows = LAYOUTS[layout]
    src, dst = restored(rows, 16384)
    row = len(rows.length) - 1
    s, d, n = int(rows.src_offset[row]), int(rows.dst_offset[row]), int(rows.length[row])
    src[s + n - 1] = dst[d + n - 1] = POISON
    assert first_mismatch(rows, src, dst, POISON) == row
    assert first_mismatch(rows, src, dst) is None  # no poison named: equal bytes are all it checks
    assert "holds the poison" in unfilled_note(rows, src, row, POISON)
    assert unfilled_note(rows, src, 0, POISON) == "" or row == 0


def test_a_neighbouring_value_is_not_taken_for_the_poison():
    rows = LAYOUTS["aligned"]
    src, dst = restored(rows, 16384)
    for near in (POISON - 1, POISON + 1, POISON ^ 0x80, 0):
        src[100] = dst[8192 + 100] = near
        assert first_mismatch(rows, src, dst, POISON) is None


def test_long_rows_are_checked_in_pieces_and_keep_their_row(monkeypatch):
    monkeypatch.setattr(check, "PIECE_BYTES", 1000)  # pieces of 1000 bytes: rows of 4096 are 5 of them
    rows = DescriptorList.from_arrays(np.array([0, 4096, 8192]), np.array([8192, 0, 4096]),
                                      np.array([4096, 4096, 3001]))
    src, dst = restored(rows, 16384)
    assert first_mismatch(rows, src, dst, POISON) is None
    for row, byte in [(0, 0), (0, 4095), (1, 999), (1, 1000), (2, 3000)]:
        bad = dst.copy()
        bad[int(rows.dst_offset[row]) + byte] ^= 0x02
        assert first_mismatch(rows, src, bad, POISON) == row, (row, byte)
    src[8192 + 2500] = dst[4096 + 2500] = POISON
    assert first_mismatch(rows, src, dst, POISON) == 2
    assert "holds the poison" in unfilled_note(rows, src, 2, POISON)
