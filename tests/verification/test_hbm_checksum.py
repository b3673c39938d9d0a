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
from kvbench.input_files import kernels_dir

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


# Pinned by hand, outside kvbench's code (the formula is in docs/verification.md). With seed 0, vector
# i holds the words 4i, 4i+1, 4i+2, 4i+3, so vector 0 gives g = (0 + K1·1 + K2·2 + K3·3) mod 2**32 | 1
# = 0x3F2271956 mod 2**32 | 1 = 0xF2271957 and vector 1 gives g = (4 + 5·K1 + 6·K2 + 7·K3) mod 2**32 | 1
# = 0x8D7EE2EF, weighted 2·1 + 1 = 3: 0xF2271957 + 3 × 0x8D7EE2EF = 0x29AA3C224.
BY_HAND = {  # (bytes, seed) → what hbm_read must sum over a buffer hbm_write filled
    (16, 0): 0xF2271957,
    (32, 0): 0x29AA3C224,
    (64, 0): 0x8C41A5BA0,  # + 5 × 0x28D6AC87 + 7 × 0xC42E761F
    (16, SEED): 0x7FDC057B,  # words 0xA5A5A5A6..A9, their products with K wrapped at 32 bits
    (64, SEED): 0x69F691DE0,
    (4 << 20, SEED): 0xFFFF3A42CEF00000,  # the true sum is 0x7_FFFF_3A42_CEF0_0000: it wraps at 2**64 as the kernel's
}


def by_hand(size: int, seed: int) -> int:
    """The kernel's formula in Python integers, apart from kvbench's numpy version."""
    total = 0
    for i in range(size // 16):
        x, y, z, w = ((4 * i + k + seed) % 2**32 for k in range(4))
        g = ((x + READ_K[0] * y + READ_K[1] * z + READ_K[2] * w) % 2**32) | 1
        total += ((2 * i + 1) % 2**32) * g
    return total % 2**64


@pytest.mark.parametrize(("size", "seed"), BY_HAND)
def test_the_expected_checksum_matches_values_computed_by_hand(size, seed):
    assert expected_read_checksum(size, seed) == BY_HAND[size, seed]
    if size <= 64:
        assert by_hand(size, seed) == BY_HAND[size, seed]


def test_a_vectors_weight_wraps_at_32_bits_as_the_kernels_does():
    """The kernel casts 2i + 1 to 32 bits: vector 2**31 weighs 1 (and, its words wrapping too, sums
    what vector 0 does)."""
    first = write_pattern(np, 0, 16, SEED)
    assert read_checksum(first, 1) == 3 * 0x7FDC057B
    assert read_checksum(first, 2**31) == 0x7FDC057B
    assert read_checksum(write_pattern(np, 16 << 31, (16 << 31) + 16, SEED), 2**31) == 0x7FDC057B


@pytest.mark.parametrize("broken", ["no position weights", "g not wrapped at 32 bits", "weights not wrapped",
                                    "no | 1"])
def test_a_host_formula_broken_in_any_part_misses_a_pinned_value(broken):
    """The pins' own sensitivity: each part of the formula dropped from a copy of it, in the test."""
    def formula(words, first_vector):
        total = 0
        for n, (x, y, z, w) in enumerate(np.asarray(words, dtype=np.uint32).reshape(-1, 4).tolist()):
            i = first_vector + n
            g = x + READ_K[0] * y + READ_K[1] * z + READ_K[2] * w
            g = g if broken == "g not wrapped at 32 bits" else g % 2**32
            g = g if broken == "no | 1" else g | 1
            weight = 1 if broken == "no position weights" else 2 * i + 1
            total += (weight if broken == "weights not wrapped" else weight % 2**32) * g
        return total % 2**64

    pins = [formula(write_pattern(np, 0, size, seed), 0) == want for (size, seed), want in BY_HAND.items()
            if size <= 64]
    pins.append(formula(write_pattern(np, 0, 16, SEED), 2**31) == 0x7FDC057B)
    assert not all(pins), f"a host checksum with '{broken}' still matches every pinned value"


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
