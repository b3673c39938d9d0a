"""A serving trace in the Mooncake format (FAST'25 release; NVIDIA Dynamo and AIPerf read the same):
one JSON object a line, `timestamp` (ms since the first request), `input_length` and
`output_length` (tokens) and `hash_ids` (prefix block hashes, `block_tokens` tokens a block: 512 in
the published traces, the last block partial).

Every way a trace can be wrong is one `BadInput` naming the file, the line and the key: a missing
file or a folder, an empty file, a line that is not a JSON object, a key missing or of the wrong
type, timestamps going back, or `hash_ids` far from ceil(input_length / block_tokens): the count may
differ from it by at most `hash_slack(ceil)` blocks (1, or 1 in 32 of a long request: generators
count the last partial block or not, some count a template's tokens), which a wrong
`--trace-block-tokens` (2× off or more) never meets. Nothing is returned half-read.

Block hashes are renumbered 0..distinct-1 in order of first appearance: the cache indexes arrays by
them. A `.gz` file is read through gzip. `mooncake-conversation` names the shipped trace
(kvbench/data/traces/, Apache-2.0, from kvcache-ai/Mooncake).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


PROGRESS_LINES = 200_000  # a long trace says how far it has read every this many lines


def read_trace(name: str, block_tokens: int = TRACE_BLOCK_TOKENS,
               progress: Callable[[int], None] | None = None) -> Trace:
    """The trace at `name` (a path or a shipped name), checked whole; `BadInput` on the first fault.
    `progress(lines)` is called every PROGRESS_LINES lines read."""
    if block_tokens < 1:
        raise BadInput(f"bad --trace-block-tokens {block_tokens}: give 1 or more tokens")
    path = resolve(name)
    where = f"trace '{name}'"
    if not path.exists():
        raise BadInput(f"{where}: no such file")
    if not path.is_file():
        raise BadInput(f"{where}: not a regular file")
    try:
        digest = _digest(path)
        stream = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")
        with stream:  # line by line: a million-request trace is never held whole as text
            columns = _read_lines(stream, where, block_tokens, progress)
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise BadInput(f"{where}: cannot be read ({type(e).__name__}: {e})") from None
    arrival, inputs, outputs, counts, ids = columns
    if not inputs:
        raise BadInput(f"{where}: empty (no requests)")
    flat = np.frombuffer(ids, dtype=np.int64) if ids else np.zeros(0, np.int64)
    return Trace(str(path), digest, block_tokens,
                 (np.frombuffer(arrival, dtype=np.float64) - arrival[0]) / 1e3,
                 np.frombuffer(inputs, dtype=np.int64).copy(), np.frombuffer(outputs, dtype=np.int64).copy(),
                 np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]), dense_ids(flat))


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def hash_slack(ceil: int) -> int:
    """How many blocks a request's `hash_ids` may differ from ceil(input_length / block_tokens)."""
    return max(1, ceil // 32)


def _bad_key(row: dict, at: str) -> BadInput:
    """The first fault of a row that failed the fast checks, named."""
    for key in KEYS:
        if key not in row:
            return BadInput(f"{at}: key '{key}' missing")
    stamp, given, out, hashes = (row[k] for k in KEYS)
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp) or stamp < 0:
        return BadInput(f"{at}: key 'timestamp' must be a number of ms ≥ 0 (found {stamp!r})")
    if not _integer(given) or given < 1:
        return BadInput(f"{at}: key 'input_length' must be a whole number of tokens ≥ 1 (found {given!r})")
    if not _integer(out) or out < 0:
        return BadInput(f"{at}: key 'output_length' must be a whole number of tokens ≥ 0 (found {out!r})")
    return BadInput(f"{at}: key 'hash_ids' must be a list of integers")


def _read_lines(lines, where: str, block_tokens: int, progress: Callable[[int], None] | None = None
                ) -> tuple[array, array, array, array, array]:
    """The trace's columns, each line checked (the common case in a few C-level calls; a row that fails
    them is named by `_bad_key`)."""
    arrival, inputs, outputs, counts = array("d"), array("q"), array("q"), array("q")
    ids = array("q")  # 8 bytes an id: a million-request trace's 24 M ids in 190 MB, not Python ints
    last, loads, number_types = -math.inf, json.loads, (int, float)
    for number, line in enumerate(lines, 1):
        if progress is not None and not number % PROGRESS_LINES:
            progress(number)
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as e:
            raise BadInput(f"{where} line {number}: not JSON ({e.msg})") from None
        if type(row) is not dict:
            raise BadInput(f"{where} line {number}: a JSON {type(row).__name__}, not an object with {', '.join(KEYS)}")
        try:
            stamp, given, out, hashes = row["timestamp"], row["input_length"], row["output_length"], row["hash_ids"]
        except KeyError:
            raise _bad_key(row, f"{where} line {number}") from None
        if not (type(stamp) in number_types and 0 <= stamp < math.inf and type(given) is int and given >= 1
                and type(out) is int and out >= 0 and type(hashes) is list and set(map(type, hashes)) <= {int}):
            raise _bad_key(row, f"{where} line {number}")
        if stamp < last:
            raise BadInput(f"{where} line {number}: key 'timestamp' goes back ({stamp!r} after {last!r}); sort the "
                           "trace by arrival")
        ceil = -(-given // block_tokens)
        if abs(len(hashes) - ceil) > max(1, ceil // 32):  # hash_slack(ceil), inline: a million rows
            raise BadInput(f"{where} line {number}: key 'hash_ids' holds {len(hashes)} blocks, but input_length "
                           f"{given} in {block_tokens}-token blocks is {ceil} (± {hash_slack(ceil)}); is "
                           "--trace-block-tokens right?")
        try:
            ids.extend(hashes)
        except OverflowError:
            raise BadInput(f"{where} line {number}: key 'hash_ids' holds an integer beyond 64 bits") from None
        last = stamp
        arrival.append(stamp)
        inputs.append(given)
        outputs.append(out)
        counts.append(len(hashes))
    return arrival, inputs, outputs, counts, ids


def dense_ids(flat: np.ndarray) -> np.ndarray:
    """Hash ids renumbered 0..distinct-1 in order of first appearance."""
    if not len(flat):
        return flat
    import pandas as pd  # its hash-based factorize numbers in order of appearance, without np.unique's sorts

    codes, _ = pd.factorize(flat, sort=False)
    return codes.astype(np.int64, copy=False)


def prefix_hits(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, tokens) each request would reuse from a cache that never evicts: its blocks seen in an
    earlier request, from its first up to the first never seen (a partial last block counts its tokens)."""
    from kvbench.kv.trace_kernels import prefix_hit_counts  # numba: loaded when a replay runs, not by `list`

    return prefix_hit_counts(trace.offsets, trace.blocks, trace.input_tokens, trace.block_tokens, max(trace.distinct, 1))
