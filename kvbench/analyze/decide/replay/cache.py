"""The tiered prefix cache, request by request (policies.py says what each choice mirrors).

Prefix semantics as vLLM, SGLang and Mooncake use them: a request reuses the longest run of its
hash blocks, from its first, that some tier holds; a block after the first miss is a miss even
when cached. The loop is numba-compiled: every tier's blocks are one doubly linked list per tier
(LRU) or per tier and hit count (LFU), over arrays indexed by block id, so a touch, an eviction
and a demotion are O(1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from kvbench.analyze.decide.replay.policies import SGLANG_LFU, tail_first
from kvbench.kv.trace import Trace, prefix_hits

unbounded_hits = prefix_hits  # a cache that never evicts: every block seen before, up to the first new one


@dataclass(frozen=True)
class CacheRun:
    """Per request (rows) and tier (columns): blocks and tokens served, blocks written into the tier."""

    hit_blocks: np.ndarray  # int32 [requests, tiers]
    hit_tokens: np.ndarray  # int64 [requests, tiers]
    written: np.ndarray  # int32 [requests, tiers]: blocks demoted into the tier (the first: new blocks inserted)
    dropped: int  # blocks that left the last tier
    where: np.ndarray  # int8 [blocks]: the tier each block ends in, -1 none
    order: list[list[int]]  # each tier's blocks at the end, next to be evicted first


@numba.njit(cache=True)
def _unlink(b, lst, prev, nxt, head, tail):
    ls = lst[b]
    p, n = prev[b], nxt[b]
    if p >= 0:
        nxt[p] = n
    else:
        head[ls] = n
    if n >= 0:
        prev[n] = p
    else:
        tail[ls] = p
    lst[b] = -1


@numba.njit(cache=True)
def _push(b, ls, lst, prev, nxt, head, tail):
    prev[b] = tail[ls]
    nxt[b] = -1
    if tail[ls] >= 0:
        nxt[tail[ls]] = b
    else:
        head[ls] = b
    tail[ls] = b
    lst[b] = ls


@numba.njit(cache=True)
def _list_of(t, b, pols, freq, minf, ntiers, fmax):
    if pols[t] != SGLANG_LFU:
        return t
    f = min(freq[b], fmax)
    if f < minf[t]:
        minf[t] = f
    return ntiers + t * (fmax + 1) + f


@numba.njit(cache=True)
def _victim(t, pols, minf, head, ntiers, fmax):
    if pols[t] != SGLANG_LFU:
        return head[t]
    f = minf[t]
    while head[ntiers + t * (fmax + 1) + f] < 0:
        f += 1
    minf[t] = f
    return head[ntiers + t * (fmax + 1) + f]


@numba.njit(cache=True)
def _simulate(offsets, blocks, input_tokens, block_tokens, caps, pols, nblocks, fmax, reverse):
    nreq, ntiers = len(input_tokens), len(caps)
    hit_blocks = np.zeros((nreq, ntiers), np.int32)
    hit_tokens = np.zeros((nreq, ntiers), np.int64)
    written = np.zeros((nreq, ntiers), np.int32)
    where = np.full(nblocks, -1, np.int8)
    lst = np.full(nblocks, -1, np.int64)
    prev = np.full(nblocks, -1, np.int64)
    nxt = np.full(nblocks, -1, np.int64)
    freq = np.zeros(nblocks, np.int64)
    nlists = ntiers + ntiers * (fmax + 1)
    head = np.full(nlists, -1, np.int64)
    tail = np.full(nlists, -1, np.int64)
    size = np.zeros(ntiers, np.int64)
    minf = np.full(ntiers, fmax, np.int64)
    dropped = 0
    for r in range(nreq):
        o, n = offsets[r], offsets[r + 1] - offsets[r]
        for i in range(n):  # lookup: the longest cached run from the first block
            t = where[blocks[o + i]]
            if t < 0:
                break
            hit_blocks[r, t] += 1
            hit_tokens[r, t] += max(0, min(block_tokens, input_tokens[r] - block_tokens * i))
        for k in range(n):  # serve: touch, promote, insert
            b = blocks[o + (n - 1 - k if reverse else k)]
            freq[b] += 1
            t = where[b]
            if t == 0:
                _unlink(b, lst, prev, nxt, head, tail)
                _push(b, _list_of(0, b, pols, freq, minf, ntiers, fmax), lst, prev, nxt, head, tail)
                continue
            if t > 0:
                _unlink(b, lst, prev, nxt, head, tail)
                size[t] -= 1
                where[b] = -1
            else:
                written[r, 0] += 1  # a new block: computed, then kept
            carry, t = b, 0
            while True:  # place `carry` in tier t, demoting that tier's victim to the next
                if t >= ntiers:
                    where[carry] = -1
                    freq[carry] = 0
                    dropped += 1
                    break
                if t > 0:
                    written[r, t] += 1
                if caps[t] == 0:
                    t += 1
                    continue
                victim = -1
                if size[t] >= caps[t]:
                    victim = _victim(t, pols, minf, head, ntiers, fmax)
                    _unlink(victim, lst, prev, nxt, head, tail)
                    size[t] -= 1
                    where[victim] = -1
                _push(carry, _list_of(t, carry, pols, freq, minf, ntiers, fmax), lst, prev, nxt, head, tail)
                size[t] += 1
                where[carry] = t
                if victim < 0:
                    break
                carry, t = victim, t + 1
    return hit_blocks, hit_tokens, written, dropped, where, lst, nxt, head


def simulate(trace: Trace, capacities: list[int], policies: list[int]) -> CacheRun:
    """Replay `trace` through tiers of `capacities` blocks (None: unbounded) under `policies`."""
    nblocks = trace.distinct
    caps = np.asarray([nblocks if c is None else min(int(c), nblocks) for c in capacities], np.int64)
    pols = np.asarray(policies, np.int64)
    fmax = int(np.bincount(trace.blocks).max()) + 1 if (pols == SGLANG_LFU).any() and nblocks else 1
    hits, tokens, written, dropped, where, lst, nxt, head = _simulate(
        trace.offsets, trace.blocks, trace.input_tokens, trace.block_tokens, caps, pols, max(nblocks, 1), fmax,
        tail_first(int(pols[0])))
    order = [_walk(t, head, nxt, len(caps), fmax, pols[t] == SGLANG_LFU) for t in range(len(caps))]
    return CacheRun(hits, tokens, written, int(dropped), where[:nblocks], order)


def _walk(t: int, head: np.ndarray, nxt: np.ndarray, ntiers: int, fmax: int, lfu: bool) -> list[int]:
    """Tier t's blocks, the next to be evicted first."""
    lists = [ntiers + t * (fmax + 1) + f for f in range(fmax + 1)] if lfu else [t]
    out = []
    for ls in lists:
        b = head[ls]
        while b >= 0:
            out.append(int(b))
            b = nxt[b]
    return out
