"""The trace reader's compiled loop (numba), apart so that the benchmark registry (`kvbench list`, every
read-only command) loads kv.replay without paying numba's start-up."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def prefix_hit_counts(offsets, blocks, input_tokens, block_tokens, nblocks):
    nreq = len(input_tokens)
    seen = np.zeros(nblocks, np.bool_)
    hit_blocks = np.zeros(nreq, np.int64)
    hit_tokens = np.zeros(nreq, np.int64)
    for r in range(nreq):
        o, n = offsets[r], offsets[r + 1] - offsets[r]
        for i in range(n):
            if not seen[blocks[o + i]]:
                break
            hit_blocks[r] += 1
            hit_tokens[r] += max(0, min(block_tokens, input_tokens[r] - block_tokens * i))
        for i in range(n):
            seen[blocks[o + i]] = True
    return hit_blocks, hit_tokens
