"""KV layouts of serving engines, and the descriptor list that restores blocks between two of them.

A block holds `block_tokens` tokens; each block has one *unit* per (layer, tensor) — K and V,
or the MLA latent — of `block_tokens × unit_bytes_per_token` bytes. Layouts differ in where
the units of a block sit:

* `layer_first` (vLLM): per layer, separate K and V tensors `[num_blocks, block_tokens, kv_heads, head_dim]`,
  so one block is `layers × 2` separate pieces.
* `page_first` (SGLang HiCache): `[pages, layers, 2, tokens, heads, dim]`, one block's units adjacent.
* `chunk` (LMCache): contiguous `[2, layers, chunk_tokens, kv_heads·head_dim]` per 256-token chunk.
* `contiguous`: the ideal; blocks stored back to back in order (a restore of consecutive tokens is one piece).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvbench.errors import BadInput
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.geometry import ModelGeometry

LAYOUTS = ("layer_first", "page_first", "chunk", "contiguous")
CHUNK_TOKENS = 256


@dataclass(frozen=True)
class KVShape:
    """The per-GPU shape of a KV pool: units per block and their size in bytes."""

    layers: int
    tensors: int  # 2 (K, V) or 1 (MLA latent)
    block_tokens: int
    token_unit_bytes: int  # one tensor, one layer, one token
    chunk_tokens: int = CHUNK_TOKENS

    @classmethod
    def of(cls, model: ModelGeometry, block_tokens: int, dtype: str, tp: int = 1,
           chunk_tokens: int = CHUNK_TOKENS) -> KVShape:
        if block_tokens < 1:
            raise BadInput(f"bad block_tokens={block_tokens}: must be at least 1")
        return cls(model.layers, model.tensors_per_layer(), block_tokens,
                   model.unit_bytes_per_token(dtype, tp), chunk_tokens)

    @property
    def units(self) -> int:
        return self.layers * self.tensors

    @property
    def unit_bytes(self) -> int:
        """One fragment of a layer_first block: one tensor of one layer for `block_tokens` tokens."""
        return self.block_tokens * self.token_unit_bytes

    @property
    def block_bytes(self) -> int:
        return self.units * self.unit_bytes


def _check(layout: str, shape: KVShape) -> None:
    if layout not in LAYOUTS:
        from kvbench.errors import unknown_name

        raise unknown_name("layout", layout, LAYOUTS)
    if layout == "chunk" and shape.chunk_tokens % shape.block_tokens:
        raise BadInput(f"layout chunk needs block_tokens dividing {shape.chunk_tokens}; got {shape.block_tokens}")


def region_bytes(layout: str, shape: KVShape, pool_blocks: int) -> int:
    """Bytes of a pool of `pool_blocks` blocks in `layout`."""
    _check(layout, shape)
    if layout == "chunk":
        per_chunk = shape.chunk_tokens // shape.block_tokens
        return -(-pool_blocks // per_chunk) * per_chunk * shape.block_bytes
    return pool_blocks * shape.block_bytes


def unit_offsets(layout: str, shape: KVShape, blocks: np.ndarray, pool_blocks: int) -> np.ndarray:
    """Byte offsets, shape (len(blocks), units), of every unit of each block; unit u = layer × tensors + tensor."""
    _check(layout, shape)
    b = np.asarray(blocks, dtype=np.int64)[:, None]
    u = np.arange(shape.units, dtype=np.int64)[None, :]
    if layout == "layer_first":
        return (u * pool_blocks + b) * shape.unit_bytes
    if layout in ("page_first", "contiguous"):
        return b * shape.block_bytes + u * shape.unit_bytes
    per_chunk = shape.chunk_tokens // shape.block_tokens
    chunk, within = b // per_chunk, b % per_chunk
    layer, tensor = u // shape.tensors, u % shape.tensors
    row = tensor * shape.layers + layer  # LMCache: [2, layers, tokens, hidden]
    chunk_bytes = shape.units * shape.chunk_tokens * shape.token_unit_bytes
    return chunk * chunk_bytes + (row * shape.chunk_tokens + within * shape.block_tokens) * shape.token_unit_bytes


def pick_blocks(count: int, pool_blocks: int, selection: str, seed: int = 0) -> np.ndarray:
    """Which source blocks a restore reads: `random` slots (seeded, distinct) or the first `count`."""
    if count > pool_blocks:
        raise BadInput(f"the pool of {pool_blocks} blocks is too small for {count} blocks")
    if selection == "sequential":
        return np.arange(count, dtype=np.int64)
    if selection == "random":
        return np.random.default_rng(seed).choice(pool_blocks, size=count, replace=False).astype(np.int64)
    raise BadInput(f"bad selection '{selection}': choose random or sequential")


def restore_descriptors(shape: KVShape, src_layout: str, dst_layout: str, src_blocks: np.ndarray,
                        src_pool_blocks: int) -> DescriptorList:
    """Descriptors that copy `src_blocks` of a `src_layout` pool into slots 0..n-1 of a `dst_layout` pool.

    Adjacent pieces are merged, so contiguous → contiguous is one descriptor.
    """
    n = len(src_blocks)
    src = unit_offsets(src_layout, shape, src_blocks, src_pool_blocks)
    dst = unit_offsets(dst_layout, shape, np.arange(n, dtype=np.int64), n)
    length = np.full(src.size, shape.unit_bytes, dtype=np.uint64)
    return DescriptorList.from_arrays(src.ravel(), dst.ravel(), length).coalesce()


def handoff_descriptors(src: KVShape, dst: KVShape, src_layout: str, dst_layout: str, src_blocks: np.ndarray,
                        src_pool_blocks: int, dst_pool_blocks: int) -> DescriptorList:
    """Descriptors that move the tokens of `src_blocks` (in order) from a `src_layout` pool of `src`
    blocks into slots 0.. of a `dst_layout` pool of `dst` blocks: the prefill → decode handoff, where
    the two engines may differ in layout and block size (vLLM's 16-token layer_first blocks into
    SGLang's 64-token pages). Both shapes are one model's (same units, same bytes per token).

    The pieces are `gcd(block sizes)` tokens of one unit: where the sizes differ, a 16-token source
    unit is a quarter of a 64-token destination unit. Adjacent pieces are merged.
    """
    if (src.units, src.token_unit_bytes) != (dst.units, dst.token_unit_bytes):
        raise BadInput("a handoff moves one model's KV: both pools need the same units and bytes per token")
    _check(src_layout, src)
    _check(dst_layout, dst)
    tokens = len(src_blocks) * src.block_tokens
    if tokens % dst.block_tokens:
        raise BadInput(f"bad tokens={tokens}: not a multiple of the destination's block_tokens={dst.block_tokens}")
    piece = int(np.gcd(src.block_tokens, dst.block_tokens))
    first = np.arange(0, tokens, piece, dtype=np.int64)  # the first token of each piece
    blocks = np.asarray(src_blocks, dtype=np.int64)
    src_at = unit_offsets(src_layout, src, blocks[first // src.block_tokens], src_pool_blocks)
    dst_at = unit_offsets(dst_layout, dst, first // dst.block_tokens, dst_pool_blocks)
    # a unit holds its block's tokens back to back: a piece starts `within` tokens into it
    src_at = src_at + ((first % src.block_tokens) * src.token_unit_bytes)[:, None]
    dst_at = dst_at + ((first % dst.block_tokens) * dst.token_unit_bytes)[:, None]
    length = np.full(src_at.size, piece * src.token_unit_bytes, dtype=np.uint64)
    return DescriptorList.from_arrays(src_at.ravel(), dst_at.ravel(), length).coalesce()
