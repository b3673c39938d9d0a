"""The staged strategy's plan, on the CPU: fragments cut at every stage boundary, checked against
the host reference with stage sizes that the fragments do not divide."""

import numpy as np
import pytest

from kvbench.errors import BadInput
from kvbench.executors.staging import cut_at_boundaries, plan_stages, run_stages_on_host
from kvbench.kv.descriptors import DescriptorList, apply_numpy
from kvbench.kv.geometry import PRESETS
from kvbench.kv.layouts import KVShape, pick_blocks, region_bytes, restore_descriptors
from kvbench.memory.pattern import fill_pattern


def test_a_fragment_straddling_a_stage_boundary_is_cut_there():
    # 48 KiB starting 16 KiB before the 8 MiB boundary: 16 KiB in stage 0, 32 KiB in stage 1
    rows = DescriptorList.from_arrays(np.array([1000]), np.array([(8 << 20) - (16 << 10)]), np.array([48 << 10]))
    cut = cut_at_boundaries(rows, 8 << 20)
    assert cut.length.tolist() == [16 << 10, 32 << 10]
    assert cut.dst_offset.tolist() == [(8 << 20) - (16 << 10), 8 << 20]
    assert cut.src_offset.tolist() == [1000, 1000 + (16 << 10)]


@pytest.mark.parametrize("stage_bytes", [8 << 20, 1 << 20, 100_000, 4096 * 3])
@pytest.mark.parametrize("block_tokens", [3, 16])
def test_every_stage_stays_inside_its_buffer_and_the_restore_matches_the_reference(stage_bytes, block_tokens):
    # Llama-3.1-8B at block_tokens=3: 6 KiB fragments, which no power-of-two stage divides
    shape = KVShape.of(PRESETS["Llama-3.1-8B"], block_tokens, "bf16")
    blocks, pool = 96 // block_tokens * 4, 96 // block_tokens * 16
    picked = pick_blocks(blocks, pool, "random", 7)
    descriptors = restore_descriptors(shape, "layer_first", "page_first", picked, pool)
    src = np.empty(region_bytes("layer_first", shape, pool), dtype=np.uint8)
    fill_pattern(src, seed=3)
    stages = plan_stages(descriptors, stage_bytes)
    for stage in stages:
        assert stage.size <= stage_bytes
        assert (stage.rows.dst_offset + stage.rows.length <= stage.size).all()
        assert stage.rows.total_bytes == stage.size  # the stage is filled whole before its DMA
    got = np.zeros(region_bytes("page_first", shape, blocks), dtype=np.uint8)
    run_stages_on_host(stages, src, got, stage_bytes)
    want = np.zeros_like(got)
    apply_numpy(descriptors, src, want)
    assert np.array_equal(got, want)


def test_a_destination_with_gaps_cannot_be_staged():
    rows = DescriptorList.from_arrays(np.array([0, 100]), np.array([0, 200]), np.array([100, 100]))
    with pytest.raises(BadInput, match="contiguous"):
        plan_stages(rows, 1 << 20)
