"""A serving trace in the Mooncake format (FAST'25 release; NVIDIA Dynamo and AIPerf read the same):
one JSON object a line, `timestamp` (ms since the first request), `input_length` and
`output_length` (tokens) and `hash_ids` (prefix block hashes, `block_tokens` tokens a block: 512 in
the published traces, the last block partial).

Every way a trace can be wrong is one `BadInput` naming the file, the line and the key: a missing
file or a folder, an empty file, a line that is not a JSON object, a key missing or of the wrong
type, timestamps going back, or `hash_ids` far from ceil(input_length / block_tokens) (the count
must be that or the floor, as Dynamo's generator writes it). Nothing is returned half-read.

Block hashes are renumbered 0..distinct-1 in order of first appearance: the cache indexes arrays by
them. A `.gz` file is read through gzip. `mooncake-conversation` names the shipped trace
(kvbench/data/traces/, Apache-2.0, from kvcache-ai/Mooncake).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from kvbench.errors import BadInput

TRACE_BLOCK_TOKENS = 512  # tokens a hash block in the published Mooncake traces
SHIPPED = {"mooncake-conversation": "mooncake-conversation.jsonl.gz"}
KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


def shipped_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "traces"


@dataclass(frozen=True)
class Trace:
    """Requests in arrival order; `blocks[offsets[i]:offsets[i + 1]]` are request i's hash blocks."""

    path: str
    digest: str  # sha256 of the file's bytes as stored
    block_tokens: int
    arrival_s: np.ndarray  # float64, seconds since the first request
    input_tokens: np.ndarray  # int64
    output_tokens: np.ndarray  # int64
    offsets: np.ndarray  # int64, requests + 1
    blocks: np.ndarray  # int64, dense ids 0..distinct-1

    @property
    def requests(self) -> int:
        return len(self.input_tokens)

    @property
    def references(self) -> int:
        return len(self.blocks)

    @property
    def distinct(self) -> int:
        return int(self.blocks.max()) + 1 if len(self.blocks) else 0

    def window(self, start: int, count: int) -> Trace:
        """Requests start..start+count (block ids kept, arrival times from the window's first)."""
        stop = min(start + count, self.requests)
        lo, hi = self.offsets[start], self.offsets[stop]
        return Trace(self.path, self.digest, self.block_tokens, self.arrival_s[start:stop] - self.arrival_s[start],
                     self.input_tokens[start:stop], self.output_tokens[start:stop],
                     self.offsets[start:stop + 1] - lo, self.blocks[lo:hi])


def resolve(name: str) -> Path:
    """A path, or the name of a shipped trace."""
    if name in SHIPPED and not Path(name).exists():
        return shipped_dir() / SHIPPED[name]
    return Path(name)


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_trace(name: str, block_tokens: int = TRACE_BLOCK_TOKENS) -> Trace:
    """The trace at `name` (a path or a shipped name), checked whole; `BadInput` on the first fault."""
    if block_tokens < 1:
        raise BadInput(f"bad --trace-block-tokens {block_tokens}: give 1 or more tokens")
    path = resolve(name)
    where = f"trace '{name}'"
    if not path.exists():
        raise BadInput(f"{where}: no such file")
    if not path.is_file():
        raise BadInput(f"{where}: not a regular file")
    try:
        raw = path.read_bytes()
        text = gzip.decompress(raw) if path.suffix == ".gz" else raw
        lines = text.decode("utf-8").splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise BadInput(f"{where}: cannot be read ({type(e).__name__}: {e})") from None
    arrival, inputs, outputs, counts, ids = [], [], [], [], []
    last = -math.inf
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        at = f"{where} line {number}"
        try:
            row = json.loads(line)
        except ValueError as e:
            raise BadInput(f"{at}: not JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise BadInput(f"{at}: a JSON {type(row).__name__}, not an object with {', '.join(KEYS)}")
        for key in KEYS:
            if key not in row:
                raise BadInput(f"{at}: key '{key}' missing")
        stamp, given, out, hashes = (row[k] for k in KEYS)
        if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp) or stamp < 0:
            raise BadInput(f"{at}: key 'timestamp' must be a number of ms ≥ 0 (found {stamp!r})")
        if stamp < last:
            raise BadInput(f"{at}: key 'timestamp' goes back ({stamp!r} after {last!r}); sort the trace by arrival")
        if not _integer(given) or given < 1:
            raise BadInput(f"{at}: key 'input_length' must be a whole number of tokens ≥ 1 (found {given!r})")
        if not _integer(out) or out < 0:
            raise BadInput(f"{at}: key 'output_length' must be a whole number of tokens ≥ 0 (found {out!r})")
        if not isinstance(hashes, list) or not all(_integer(h) for h in hashes):
            raise BadInput(f"{at}: key 'hash_ids' must be a list of integers")
        full, ceil = given // block_tokens, -(-given // block_tokens)
        if len(hashes) not in (full, ceil):
            raise BadInput(f"{at}: key 'hash_ids' holds {len(hashes)} blocks, but input_length {given} in "
                           f"{block_tokens}-token blocks is {ceil} (or {full}); is --trace-block-tokens right?")
        last = stamp
        arrival.append(stamp)
        inputs.append(given)
        outputs.append(out)
        counts.append(len(hashes))
        ids.extend(hashes)
    if not inputs:
        raise BadInput(f"{where}: empty (no requests)")
    try:
        flat = np.asarray(ids, dtype=np.int64)
    except OverflowError:
        raise BadInput(f"{where}: key 'hash_ids' holds an integer beyond 64 bits") from None
    return Trace(str(path), hashlib.sha256(raw).hexdigest(), block_tokens,
                 (np.asarray(arrival, dtype=np.float64) - arrival[0]) / 1e3,
                 np.asarray(inputs, dtype=np.int64), np.asarray(outputs, dtype=np.int64),
                 np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]), dense_ids(flat))


def dense_ids(flat: np.ndarray) -> np.ndarray:
    """Hash ids renumbered 0..distinct-1 in order of first appearance."""
    if not len(flat):
        return flat
    uniq, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    return rank[inverse]


def prefix_hits(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, tokens) each request would reuse from a cache that never evicts: its blocks seen in an
    earlier request, from its first up to the first never seen (a partial last block counts its tokens)."""
    return _prefix_hits(trace.offsets, trace.blocks, trace.input_tokens, trace.block_tokens, max(trace.distinct, 1))


@numba.njit(cache=True)
def _prefix_hits(offsets, blocks, input_tokens, block_tokens, nblocks):
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
