"""Staging a fragmented restore through fixed-size buffers: which bytes go into which stage.

The `staged` CUDA strategy gathers fragments on the CPU into a pinned stage of `stage_bytes`,
then copies the stage to the GPU in one DMA. The destination is contiguous, so stage `c` holds
destination bytes [c × stage_bytes, (c + 1) × stage_bytes) of it; a fragment that straddles that
boundary is cut there, or its tail would land past the stage's end (a 48 KiB fragment at
8 MiB − 16 KiB). The plan is pure arithmetic, tested on the CPU against the host reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvbench.errors import BadInput
from kvbench.kv.descriptors import DescriptorList


@dataclass(frozen=True)
class Stage:
    """One stage's work: `rows` gather source bytes (src_offset) into the stage (dst_offset is
    stage-local), then `size` bytes of the stage go to destination offset `dst_offset`."""

    dst_offset: int
    size: int
    rows: DescriptorList


def cut_at_boundaries(descriptors: DescriptorList, boundary: int, origin: int = 0) -> DescriptorList:
    """The same copies with every row cut where its destination crosses `origin + k × boundary`."""
    if boundary <= 0:
        raise ValueError(f"boundary {boundary} must be positive")
    start = descriptors.dst_offset.astype(np.int64) - origin
    end = start + descriptors.length.astype(np.int64)
    first, last = start // boundary, (end - 1) // boundary
    pieces = (last - first + 1).astype(np.int64)
    row = np.repeat(np.arange(len(descriptors)), pieces)
    k = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    chunk = first[row] + k
    piece_start = np.maximum(start[row], chunk * boundary)
    piece_end = np.minimum(end[row], (chunk + 1) * boundary)
    src = descriptors.src_offset.astype(np.int64)[row] + (piece_start - start[row])
    return DescriptorList.from_arrays(src, piece_start + origin, piece_end - piece_start)


def plan_stages(descriptors: DescriptorList, stage_bytes: int) -> list[Stage]:
    """Stages for a restore whose destination fragments, in destination order, are contiguous."""
    order = np.argsort(descriptors.dst_offset, kind="stable")
    rows = DescriptorList(descriptors.rows[order])
    ends = rows.dst_offset + rows.length
    if len(rows) > 1 and (rows.dst_offset[1:] != ends[:-1]).any():
        raise BadInput("staging needs a destination whose fragments are contiguous (page_first or contiguous), "
                       "not layer_first")
    base, total = int(rows.dst_offset[0]), rows.total_bytes
    pieces = cut_at_boundaries(rows, stage_bytes, base)
    chunk_of = (pieces.dst_offset - np.uint64(base)) // np.uint64(stage_bytes)
    stages = []
    for c in range(-(-total // stage_bytes)):
        mine = chunk_of == c
        local = pieces.dst_offset[mine] - np.uint64(base + c * stage_bytes)
        stages.append(Stage(base + c * stage_bytes, min(stage_bytes, total - c * stage_bytes),
                            DescriptorList.from_arrays(pieces.src_offset[mine], local, pieces.length[mine])))
    return stages


def run_stages_on_host(stages: list[Stage], src: np.ndarray, dst: np.ndarray, stage_bytes: int) -> None:
    """The staged restore with numpy standing in for the pinned stage and the DMA (tests, two-hop)."""
    from kvbench.kv.descriptors import apply_numpy

    stage = np.empty(stage_bytes, dtype=np.uint8)
    for s in stages:
        apply_numpy(s.rows, src, stage)
        dst[s.dst_offset:s.dst_offset + s.size] = stage[:s.size]
