"""`kv.restore` and `kv.offload`: move a model's KV blocks between tiers in real serving layouts.

Restore reads `tokens / block_tokens` blocks (random slots of a pool, seeded, or the first
ones) from a `src_layout` pool and writes them into a `dst_layout` pool; offload is the way
back. Every strategy consumes the same descriptor list; `contiguous` moves the same bytes in
one copy, the ceiling the others are compared to.
"""

from __future__ import annotations

from typing import Any

from kvbench.benches import kv_cuda, kv_nixl
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.gpu_common import check_gpu
from kvbench.benches.params import Param
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.executors.cuda_kv import STRATEGIES as CUDA_STRATEGIES
from kvbench.executors.host import PIECE_BYTES, HostExecutor, NumpyExecutor, max_threads
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.geometry import DTYPE_BYTES, PRESETS, get_model
from kvbench.kv.layouts import LAYOUTS, KVShape, pick_blocks, region_bytes, restore_descriptors
from kvbench.measure.engine import Workload
from kvbench.measure.measurement import Measurement
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.pattern import fill_pattern, poison

# Strategies that run on host memory; the CUDA ones live in kvbench/executors/cuda_kv.py.
HOST_STRATEGIES = {
    "host": HostExecutor(0),
    "host-numpy": NumpyExecutor(),
    "contiguous": HostExecutor(PIECE_BYTES),  # one descriptor, copied with the host's fastest piece size
}


def layout_metadata(shape: KVShape, blocks: int, pool_blocks: int, layout_fragments: int, selection: str) -> dict[str, Any]:
    """What every kv.restore / kv.offload result records about the KV it moved, whatever the strategy
    (host, CUDA, NIXL): `plan`, `fit` and the report read these keys. Each strategy adds
    `fragments`, the pieces it really submits (1 for a contiguous ceiling)."""
    return {"model_bytes_per_token": shape.units * shape.token_unit_bytes, "blocks": blocks,
            "pool_blocks": pool_blocks, "layout_fragments": layout_fragments, "fragment_bytes": shape.unit_bytes,
            "selection": selection}


class _KVTransfer(Benchmark):
    direction: str  # "restore" or "offload"
    params = {
        "model": Param("text", "Llama-3.1-70B", f"preset ({', '.join(PRESETS)}) or a config.json path"),
        "tokens": Param("int", 4096, "tokens to move (a multiple of block_tokens)", minimum=1),
        "block_tokens": Param("int", 16, "tokens per KV block", minimum=1),
        "src_layout": Param("choice", "page_first", "source pool layout", choices=LAYOUTS),
        "dst_layout": Param("choice", "layer_first", "destination pool layout", choices=LAYOUTS),
        "dtype": Param("choice", "bf16", "KV element type", choices=tuple(DTYPE_BYTES)),
        "tp": Param("int", 1, "tensor-parallel degree (each GPU holds kv_heads / tp)", minimum=1),
        "strategy": Param("choice", "host", "how fragments are moved: host strategies; nixl for src=file | "
                          "remote; CUDA ones for src=pinned dst=device",
                          choices=(*HOST_STRATEGIES, "nixl", *CUDA_STRATEGIES)),
        "file_layout": Param("choice", "single", "src=file: one file for the pool, or one file per block",
                             choices=("single", "per_block")),
        "peer": Param("choice", "inproc", "src=remote: the agent holding the pool", choices=("inproc", "local")),
        "src": Param("memory", "pageable", "source memory kind"),
        "dst": Param("memory", "pageable", "destination memory kind"),
        "concurrency": Param("int", 1, "copy threads", minimum=1),
        "selection": Param("choice", "random", "which pool blocks: random (seeded) or sequential",
                           choices=("random", "sequential")),
        "pool_blocks": Param("int", 0, "blocks in the source pool (0: 4 x the blocks moved)", minimum=0),
        "seed": Param("int", 0, "seed of the random block selection", minimum=0),
    }

    def _shape(self, params: dict[str, Any]) -> KVShape:
        return KVShape.of(get_model(params["model"]), params["block_tokens"], params["dtype"], params["tp"])

    def _blocks(self, params: dict[str, Any]) -> tuple[int, int]:
        blocks = params["tokens"] // params["block_tokens"]
        return blocks, params["pool_blocks"] or 4 * blocks

    def validate(self, params: dict[str, Any]) -> None:
        tokens, block_tokens = params["tokens"], params["block_tokens"]
        if tokens % block_tokens:
            whole = max(tokens // block_tokens, 1) * block_tokens
            raise BadInput(f"bad tokens={tokens}: not a multiple of block_tokens={block_tokens} "
                           f"(kvbench moves whole blocks; use {whole})")
        shape = self._shape(params)
        blocks, pool = self._blocks(params)
        if blocks > pool:
            raise BadInput(f"bad pool_blocks={pool}: too small for {blocks} blocks of {block_tokens} tokens")
        kv_nixl.check_nixl_params(params)
        if params["strategy"] == "staged" and params["dst_layout"] not in ("page_first", "contiguous"):
            raise BadInput(f"bad strategy=staged with dst_layout={params['dst_layout']}: staging copies whole chunks, "
                           "so the destination fragments must be contiguous (page_first or contiguous)")
        # region_bytes also refuses a layout this block size cannot use
        pool_bytes = region_bytes(params["src_layout"], shape, pool)
        moved_bytes = region_bytes(params["dst_layout"], shape, blocks)
        restore = self.direction == "restore"
        sizes = {"src": pool_bytes if restore else moved_bytes, "dst": moved_bytes if restore else pool_bytes}
        kinds = {key: parse_kind(params[key]) for key in sizes}
        check_fits(sum(b for key, b in sizes.items() if kinds[key].name != "device"), "KV source pool + destination")
        for key, kind in kinds.items():  # a GPU buffer: checked before allocating (cudaMemGetInfo), where CUDA works
            if kind.name == "device":
                check_gpu(kind.index or 0, sizes[key], given=f"{key}={params[key]}")

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        if params["strategy"] == "nixl":
            return kv_nixl.unavailable_reason(params, self.direction)
        if params["strategy"] in CUDA_STRATEGIES:
            return kv_cuda.unavailable_reason(params, self.direction)
        for key in ("src", "dst"):
            if not params[key].startswith(("pageable", "numa")):
                return f"{key}={params[key]}: strategy '{params['strategy']}' moves host memory only"
        if params["concurrency"] > max_threads():
            return f"concurrency={params['concurrency']} but this host runs at most {max_threads()} copy threads"
        return None

    def path(self, params: dict[str, Any]) -> list[Segment]:
        if params["strategy"] == "nixl":
            return kv_nixl.path(params)
        if params["strategy"] in CUDA_STRATEGIES:
            return kv_cuda.path(params)
        return [("dram_copy",)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        shape = self._shape(params)
        blocks, pool = self._blocks(params)
        selection = "sequential" if "contiguous" in (params["src_layout"], params["dst_layout"]) else params["selection"]
        picked = pick_blocks(blocks, pool, selection, params["seed"])
        pool_layout, moved_layout = params["src_layout"], params["dst_layout"]
        descriptors = restore_descriptors(shape, pool_layout, moved_layout, picked, pool)
        pool_bytes, moved_bytes = region_bytes(pool_layout, shape, pool), region_bytes(moved_layout, shape, blocks)
        layout = layout_metadata(shape, blocks, pool, len(descriptors), selection)
        if params["strategy"] == "nixl":
            return kv_nixl.prepare_restore(params, shape, descriptors, pool_bytes, moved_bytes, layout)
        if params["strategy"] in CUDA_STRATEGIES:
            if params["strategy"] == "gpu-contiguous":
                descriptors = DescriptorList.contiguous(descriptors.total_bytes)
            return kv_cuda.prepare_restore(params, descriptors, pool_bytes, moved_bytes, layout)
        if self.direction == "offload":  # the way back: from the blocks in use into the pool
            descriptors = DescriptorList.from_arrays(descriptors.dst_offset, descriptors.src_offset, descriptors.length)
            src_bytes, dst_bytes = moved_bytes, pool_bytes
        else:
            src_bytes, dst_bytes = pool_bytes, moved_bytes
        if params["strategy"] == "contiguous":
            descriptors = DescriptorList.contiguous(descriptors.total_bytes)
        fragments = len(descriptors)  # what this strategy really submits: 1 for the ceiling
        src = allocate(params["src"], src_bytes)
        dst = allocate(params["dst"], dst_bytes)
        fill_pattern(src.host_array, seed=params["seed"] + 1)
        run = HOST_STRATEGIES[params["strategy"]].bind(src, dst, descriptors, params["concurrency"])

        def check() -> None:
            row = first_mismatch(descriptors, src.host_array, dst.host_array)
            if row is not None:
                raise IntegrityError(f"descriptor {row} of {len(descriptors)} landed wrong")

        total = descriptors.total_bytes
        workload = Workload(total, run, lambda: poison(dst.host_array), check)
        metadata = {**layout, "fragments": fragments, "buffers": {"src": src.describe(), "dst": dst.describe()}}

        def derive(m: Measurement) -> dict[str, Any]:
            median = m.summary.median
            return {"tokens_per_s": params["tokens"] / median, "us_per_fragment": median / fragments * 1e6}

        def close() -> None:
            src.close()
            dst.close()

        return Prepared(workload, metadata, close, derive)


@register
class KVRestore(_KVTransfer):
    id = "kv.restore"
    description = "restore a model's KV blocks from a pool into serving layout (bytes once)"
    direction = "restore"


@register
class KVOffload(_KVTransfer):
    id = "kv.offload"
    description = "offload a model's KV blocks from serving layout back into a pool"
    direction = "offload"
