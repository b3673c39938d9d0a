"""hbm.read's check, on the CPU: the checksum its timed kernel produces (kernels/hbm.cu), in the
kernel's own arithmetic, and the breakages it catches.

| check | breakages it is shown to catch |
|---|---|
| position-weighted checksum of every 16-byte vector, from the timed launch, against the pattern's | a vector skipped; a vector read twice; half the vectors read (every other one: the old XOR's blind spot); a vector read from the wrong place; one word wrong |

Guarantee: each vector's term is odd (both factors are), so a single vector skipped or repeated
always changes the sum mod 2**64; a wider error passes only if its terms cancel (2**-64).
"""

import re

import numpy as np
import pytest

from kvbench.benches.hbm import (
    READ_K,
    SEED,
    chunks,
    expected_read_checksum,
    read_checksum,
    write_pattern,
)
from kvbench.resources import kernels_dir

N_VECTORS = 4096


@pytest.fixture(scope="module")
def words():
    return write_pattern(np, 0, 16 * N_VECTORS, SEED).reshape(-1, 4)


def checksum_of(vectors: np.ndarray, indices: np.ndarray) -> int:
    """What the kernel sums when vector position i holds `vectors[k]` for (i, k) in `indices`."""
    total = 0
    for i, k in indices:
        total = (total + read_checksum(vectors[k], int(i))) % (1 << 64)
    return total


def test_the_kernel_and_kvbench_use_the_same_constants():
    source = (kernels_dir() / "hbm.cu").read_text()
    found = tuple(int(re.search(rf"#define K{n} (0x[0-9A-F]+)u", source).group(1), 16) for n in (1, 2, 3))
    assert found == READ_K
    assert "(2ull * i + 1ull)" in source and "| 1u" in source


def test_the_expected_value_is_the_sum_over_every_vector(words):
    assert expected_read_checksum(16 * N_VECTORS) == read_checksum(words)
    assert len(chunks(3 << 26)) == 3  # the host computes it in 64 MiB pieces


@pytest.mark.parametrize("breakage", ["skip", "twice", "half", "wrong place", "one word"])
def test_a_broken_read_changes_the_checksum(words, breakage):
    want = read_checksum(words)
    every = [(i, i) for i in range(N_VECTORS)]
    if breakage == "skip":
        read = [p for p in every if p[0] != 1000]
    elif breakage == "twice":
        read = [*every, (1000, 1000)]
    elif breakage == "half":
        read = every[::2]
    elif breakage == "wrong place":
        read = [(i, 1001 if i == 1000 else k) for i, k in every]
    else:
        bad = words.copy()
        bad[1000, 2] ^= 1
        assert read_checksum(bad) != want
        return
    assert checksum_of(words, np.array(read)) != want


def test_the_old_xor_checksum_could_not_see_half_a_read(words):
    """Why the checksum changed: XOR of every word equals XOR of the even-indexed vectors' words
    whenever the odd ones XOR to zero, as counting patterns do (2**28 vectors of 1 GiB)."""
    everything = np.bitwise_xor.reduce(words.ravel())
    odd = np.bitwise_xor.reduce(words[1::2].ravel())
    assert odd == 0 and np.bitwise_xor.reduce(words[::2].ravel()) == everything
