"""Hand-made traces: requests as lists of block ids (any ints), 4 tokens a block."""

from __future__ import annotations

import numpy as np

from kvbench.kv.trace import Trace, dense_ids

BLOCK = 4


def make_trace(requests: list[list[int]], input_tokens: list[int] | None = None, gap_s: float = 1.0) -> Trace:
    tokens = input_tokens or [BLOCK * len(r) for r in requests]
    flat = np.asarray([b for r in requests for b in r], dtype=np.int64)
    return Trace("hand-made", "0" * 64, BLOCK, np.arange(len(requests)) * gap_s, np.asarray(tokens, np.int64),
                 np.ones(len(requests), np.int64), np.concatenate([[0], np.cumsum([len(r) for r in requests])]),
                 dense_ids(flat))
