"""The pattern's compiled kernels (numba), and the guard check's, apart so that importing
`kvbench.memory.pattern` for its constants does not pay numba's start-up: a `kvbench history` never
fills a byte."""

from __future__ import annotations

import numba
import numpy as np

from kvbench.memory.poison import POISON

_GOLDEN = 0x9E3779B97F4A7C15
_POISON_WORD = np.uint64(POISON * 0x0101010101010101)  # eight poison bytes


@numba.njit(nogil=True, inline="always")
def _mix(x):  # pragma: no cover - compiled: splitmix64's finalizer
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(nogil=True, inline="always")
def _word(index, key):  # pragma: no cover - compiled
    h = _mix(index * np.uint64(_GOLDEN) + key)
    for k in range(8):  # a byte that came out as the poison is flipped away from it
        shift = np.uint64(8 * k)
        if (h >> shift) & np.uint64(0xFF) == np.uint64(POISON):
            h ^= np.uint64(0x80) << shift
    return h


@numba.njit(nogil=True, parallel=True, cache=True)
def fill_words(words, first, key):  # pragma: no cover - compiled
    for i in numba.prange(words.shape[0]):
        words[i] = _word(np.uint64(first + i), key)


@numba.njit(nogil=True, cache=True)
def one_word(index, key):  # pragma: no cover - compiled
    return _word(np.uint64(index), key)


@numba.njit(nogil=True, parallel=True, cache=True)
def first_not_poison(data, starts, ends):  # pragma: no cover - compiled: the guard check (memory/guard.py)
    """Index of the first byte in the [starts[i], ends[i]) ranges of `data` that is not the poison, -1 if none."""
    words = data[: data.shape[0] // 8 * 8].view(np.uint64)
    bad = np.full(starts.shape[0], -1, dtype=np.int64)
    for i in numba.prange(starts.shape[0]):
        s, e = starts[i], ends[i]
        a, b = min((s + 7) // 8, e // 8), e // 8  # whole words in [a, b); loose bytes around them
        middle = words[a:b]  # a slice, so the loop below vectorises (8 bytes at a time, no early exit)
        differs = np.uint64(0)
        for w in range(middle.shape[0]):
            differs |= middle[w] ^ _POISON_WORD
        loose = data[s:max(s, a * 8)]
        tail = data[max(s, b * 8):e]
        clean = differs == 0 and (loose == POISON).all() and (tail == POISON).all()
        if not clean:
            for j in range(s, e):
                if data[j] != POISON:
                    bad[i] = j
                    break
    for i in range(bad.shape[0]):
        if bad[i] >= 0:
            return bad[i]
    return -1


_CHUNK_WORDS = 1 << 17  # 1 MiB of words per parallel chunk: threads share a large buffer, a bad byte is found early
_LOW = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)


@numba.njit(nogil=True, parallel=True, cache=True)
def first_difference(a, b):  # pragma: no cover - compiled: host copies' check (benches/dram.py)
    """Index of the first byte where uint8 arrays `a` and `b` (same length) differ, -1 if none: eight
    bytes at a time over 1 MiB chunks in parallel (numpy's array_equal builds a bool array as large
    as the buffer), each chunk with a difference scanned byte by byte for its first."""
    n = a.shape[0]
    words = n // 8
    aw, bw = a[: words * 8].view(np.uint64), b[: words * 8].view(np.uint64)
    chunks = (words + _CHUNK_WORDS - 1) // _CHUNK_WORDS
    bad = np.full(chunks, -1, dtype=np.int64)
    for c in numba.prange(chunks):
        s, e = c * _CHUNK_WORDS, min(words, (c + 1) * _CHUNK_WORDS)
        x, y = aw[s:e], bw[s:e]  # slices, so the loop below vectorises (no early exit)
        differs = np.uint64(0)
        for w in range(x.shape[0]):
            differs |= x[w] ^ y[w]
        if differs != 0:
            for j in range(s * 8, e * 8):
                if a[j] != b[j]:
                    bad[c] = j
                    break
    for c in range(chunks):
        if bad[c] >= 0:
            return bad[c]
    for j in range(words * 8, n):
        if a[j] != b[j]:
            return j
    return -1


@numba.njit(nogil=True, parallel=True, cache=True)
def first_poison(data):  # pragma: no cover - compiled: a source that was never filled (benches/dram.py)
    """Index of the first byte of uint8 `data` that is the poison, -1 if none: a word holds one when
    word ^ poison has a zero byte, which (x - 0x01…01) & ~x & 0x80…80 tells exactly for the word."""
    n = data.shape[0]
    words = n // 8
    dw = data[: words * 8].view(np.uint64)
    chunks = (words + _CHUNK_WORDS - 1) // _CHUNK_WORDS
    bad = np.full(chunks, -1, dtype=np.int64)
    for c in numba.prange(chunks):
        s, e = c * _CHUNK_WORDS, min(words, (c + 1) * _CHUNK_WORDS)
        x = dw[s:e]
        hit = np.uint64(0)
        for w in range(x.shape[0]):
            v = x[w] ^ _POISON_WORD
            hit |= (v - _LOW) & ~v & _HIGH
        if hit != 0:
            for j in range(s * 8, e * 8):
                if data[j] == POISON:
                    bad[c] = j
                    break
    for c in range(chunks):
        if bad[c] >= 0:
            return bad[c]
    for j in range(words * 8, n):
        if data[j] == POISON:
            return j
    return -1
