"""Every layout's restore, applied by the host executor, equals numpy re-indexing of the same tensors."""

import numpy as np
import pytest

from kvbench.errors import BadInput
from kvbench.executors.host import HostExecutor
from kvbench.kv.geometry import ModelGeometry
from kvbench.kv.layouts import (
    LAYOUTS,
    KVShape,
    pick_blocks,
    region_bytes,
    restore_descriptors,
)
from kvbench.memory.kinds import allocate
from kvbench.memory.pattern import fill_pattern

MODEL = ModelGeometry("tiny", layers=3, kv_heads=2, head_dim=4)
MLA = ModelGeometry("tiny-mla", layers=3, kv_heads=1, head_dim=6, mla_dim=6)


def as_blocks(layout, array, shape, pool):
    """A view indexed [block, layer, tensor, token, byte] of a pool in `layout`."""
    L, T, bt, tu = shape.layers, shape.tensors, shape.block_tokens, shape.token_unit_bytes
    if layout == "layer_first":
        return array.reshape(L, T, pool, bt, tu).transpose(2, 0, 1, 3, 4)
    if layout in ("page_first", "contiguous"):
        return array.reshape(pool, L, T, bt, tu)
    per = shape.chunk_tokens // bt
    chunks = array.size // (T * L * shape.chunk_tokens * tu)
    return array.reshape(chunks, T, L, per, bt, tu).transpose(0, 3, 2, 1, 4, 5).reshape(chunks * per, L, T, bt, tu)


@pytest.mark.parametrize("model", [MODEL, MLA])
@pytest.mark.parametrize("src_layout", LAYOUTS)
@pytest.mark.parametrize("dst_layout", LAYOUTS)
def test_restore_matches_numpy_reindexing(model, src_layout, dst_layout):
    shape = KVShape.of(model, block_tokens=4, dtype="bf16", chunk_tokens=16)
    pool, count = 12, 5
    selection = "sequential" if "contiguous" in (src_layout, dst_layout) else "random"
    picked = pick_blocks(count, pool, selection, seed=3)
    descriptors = restore_descriptors(shape, src_layout, dst_layout, picked, pool)
    assert descriptors.total_bytes == count * shape.block_bytes
    with allocate("pageable", region_bytes(src_layout, shape, pool)) as src, \
         allocate("pageable", region_bytes(dst_layout, shape, count)) as dst:
        fill_pattern(src.host_array, seed=5)
        HostExecutor(0).bind(src, dst, descriptors, threads=2)()
        got = as_blocks(dst_layout, dst.host_array, shape, count if dst_layout != "chunk" else -(-count // 4) * 4)
        want = as_blocks(src_layout, src.host_array, shape, pool)[picked]
        assert np.array_equal(got[:count], want)


def test_fragment_counts_per_layout():
    shape = KVShape.of(ModelGeometry("q", 64, 8, 128), block_tokens=16, dtype="bf16")
    picked = pick_blocks(10, 100, "random")
    assert len(restore_descriptors(shape, "page_first", "layer_first", picked, 100)) == 10 * 128
    assert len(restore_descriptors(shape, "page_first", "page_first", picked, 100)) <= 10
    seq = pick_blocks(10, 100, "sequential")
    assert len(restore_descriptors(shape, "contiguous", "contiguous", seq, 100)) == 1


def test_bad_layout_inputs():
    shape = KVShape.of(MODEL, block_tokens=48, dtype="bf16")
    with pytest.raises(BadInput, match="block_tokens dividing 256"):
        region_bytes("chunk", shape, 4)
    with pytest.raises(BadInput, match="too small for 5 blocks"):
        pick_blocks(5, 4, "random")
    with pytest.raises(BadInput, match="unknown layout"):
        region_bytes("paged", shape, 4)


def _token_bytes(layout, shape, pool, pool_blocks, block, token):
    """Every unit's bytes of one token of one block, read with the layout's offsets (the oracle)."""
    from kvbench.kv.layouts import unit_offsets

    at = unit_offsets(layout, shape, np.array([block]), pool_blocks)[0] + token * shape.token_unit_bytes
    return [bytes(pool[o:o + shape.token_unit_bytes]) for o in at]


@pytest.mark.parametrize("src_layout, src_bt, dst_layout, dst_bt", [
    ("layer_first", 16, "page_first", 64),  # vLLM → SGLang
    ("page_first", 64, "layer_first", 16),
    ("chunk", 16, "page_first", 32),
    ("layer_first", 16, "layer_first", 16),
])
def test_a_handoff_puts_every_token_of_every_unit_where_the_decode_layout_keeps_it(src_layout, src_bt, dst_layout,
                                                                                   dst_bt):
    from kvbench.kv.descriptors import apply_numpy
    from kvbench.kv.layouts import handoff_descriptors, pick_blocks, region_bytes

    src, dst = KVShape.of(MODEL, src_bt, "bf16"), KVShape.of(MODEL, dst_bt, "bf16")
    tokens = 128
    picked = pick_blocks(tokens // src_bt, 4 * tokens // src_bt, "random", seed=3)
    pool_blocks, decode_blocks = 4 * tokens // src_bt, 2 * tokens // dst_bt
    rows = handoff_descriptors(src, dst, src_layout, dst_layout, picked, pool_blocks, decode_blocks)
    pool = np.random.default_rng(1).integers(0, 255, region_bytes(src_layout, src, pool_blocks), dtype=np.uint8)
    decode = np.zeros(region_bytes(dst_layout, dst, decode_blocks), dtype=np.uint8)
    apply_numpy(rows, pool, decode)
    assert rows.total_bytes == tokens * src.units * src.token_unit_bytes
    for t in range(tokens):
        want = _token_bytes(src_layout, src, pool, pool_blocks, int(picked[t // src_bt]), t % src_bt)
        assert _token_bytes(dst_layout, dst, decode, decode_blocks, t // dst_bt, t % dst_bt) == want, t


def test_a_handoff_of_tokens_the_decode_blocks_cannot_hold_whole_is_refused():
    from kvbench.kv.layouts import handoff_descriptors

    src, dst = KVShape.of(MODEL, 16, "bf16"), KVShape.of(MODEL, 64, "bf16")
    with pytest.raises(BadInput, match="bad tokens=48"):
        handoff_descriptors(src, dst, "layer_first", "page_first", np.arange(3), 3, 2)
