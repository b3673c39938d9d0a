"""The names of the ways a KV restore can move its fragments, as results record them.

The benchmarks own how each works (kvbench/benches/kv*.py, kvbench/executors/); this module owns
only what analysis needs to know of them without importing a benchmark: which strategies are the
one-copy ceilings (the same bytes moved as one piece), which are not a way to restore fragmented KV.
"""

from __future__ import annotations

HOST = ("host", "host-numpy", "contiguous")
CUDA = ("ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged", "gpu-contiguous")
NIXL = ("nixl",)
CEILINGS = ("contiguous", "gpu-contiguous")  # one piece: the ceiling the fragmented ones are judged against


def is_ceiling(strategy: str | None) -> bool:
    return strategy in CEILINGS
