"""Descriptor generation must stay vectorized: 1 M descriptors in under 50 ms (issue goal).

Run with `make bench` (never part of the test suite, which asserts no speed); it prints its ratio to
the goal and fails `make bench` when the goal is missed.
"""

import numpy as np

from kvbench.kv.geometry import get_model
from kvbench.kv.layouts import KVShape, pick_blocks, restore_descriptors

GOAL_S = 0.050


def test_one_million_descriptors(benchmark):
    shape = KVShape.of(get_model("Llama-3.1-70B"), block_tokens=16, dtype="bf16")  # 160 fragments a block
    blocks = 1_000_000 // shape.units + 1
    picked = pick_blocks(blocks, 4 * blocks, "random", seed=0)
    descriptors = benchmark(restore_descriptors, shape, "page_first", "layer_first", picked, 4 * blocks)
    assert len(descriptors) >= 1_000_000
    assert descriptors.total_bytes == blocks * shape.block_bytes
    median = benchmark.stats.stats.median
    print(f"\n{len(descriptors):,} descriptors in {median * 1e3:.1f} ms: {median / GOAL_S:.2f} x the 50 ms goal")
    assert np.all(descriptors.length == shape.unit_bytes)
    assert median <= GOAL_S, f"goal missed: {median * 1e3:.1f} ms for 1 M descriptors, goal 50 ms"
