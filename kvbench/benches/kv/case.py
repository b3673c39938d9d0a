"""One KV transfer case as every strategy family sees it: the layout's descriptors, the buffers'
sizes, and what each result records about the KV it moved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.layouts import KVShape
from kvbench.measure.measurement import Measurement


@dataclass(frozen=True)
class KVCase:
    """`descriptors` copy the chosen blocks from the pool (`src_layout`) into serving slots
    (`dst_layout`); for an offload the families swap the roles themselves."""

    params: dict[str, Any]
    direction: str  # restore | offload
    shape: KVShape
    descriptors: DescriptorList
    pool_bytes: int
    moved_bytes: int
    layout: dict[str, Any]  # layout_metadata(...)
    src_blocks: Any = None  # the pool blocks restored, slot by slot (numpy int64); two-hop reads them whole


def layout_metadata(shape: KVShape, blocks: int, pool_blocks: int, layout_fragments: int, selection: str) -> dict[str, Any]:
    """What every kv.restore / kv.offload result records about the KV it moved, whatever the strategy
    (host, CUDA, NIXL): `plan`, `fit` and the report read these keys. Each strategy adds
    `fragments`, the pieces it really submits (1 for a contiguous ceiling)."""
    return {"model_bytes_per_token": shape.units * shape.token_unit_bytes, "blocks": blocks,
            "pool_blocks": pool_blocks, "layout_fragments": layout_fragments, "fragment_bytes": shape.unit_bytes,
            "selection": selection}


def rates(tokens: int, fragments: int, m: Measurement) -> dict[str, Any]:
    """KV tokens per second and microseconds per submitted fragment, from the median sample."""
    median = m.summary.median
    return {"tokens_per_s": tokens / median, "us_per_fragment": median / fragments * 1e6}
