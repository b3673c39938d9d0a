"""`kv.restore` and `kv.offload`: move a model's KV blocks between tiers in real serving layouts.

Restore reads `tokens / block_tokens` blocks (random slots of a pool, seeded, or the first
ones) from a `src_layout` pool and writes them into a `dst_layout` pool; offload is the way
back. Every strategy is a registered executor and consumes the same descriptor list; its family
(host, cuda, nixl: kvbench/benches/kv/{host,cuda,nixl}.py) prepares the memory around it. A
`ceiling` strategy (`contiguous`, `gpu-contiguous`) moves the same bytes in one copy, what the
others are compared to.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any

from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.declared import KV_TRANSFER
from kvbench.benches.kv import burst, cuda, host, nixl, twohop
from kvbench.benches.kv.case import KVCase, layout_metadata
from kvbench.benches.registry import register
from kvbench.benches.transport import uses_mooncake, validate_transport
from kvbench.benches.under_load import refuse_load, with_load
from kvbench.errors import BadInput
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.geometry import get_model
from kvbench.kv.layouts import (
    KVShape,
    pick_blocks,
    region_bytes,
    restore_descriptors,
)
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import parse_kind
from kvbench.metadata import REQUEST_MS

# Each executor family's preparation: unavailable_reason(params, direction), path(params), prepare(case)
FAMILIES: dict[str, ModuleType] = {"host": host, "cuda": cuda, "nixl": nixl}
REQUESTS = 30  # single restores timed after the samples: enough for a p90; p99 and max are the worst seen

__all__ = ["KVRestore", "KVOffload", "layout_metadata"]


class _KVTransfer(Benchmark):
    direction: str  # "restore" or "offload"
    params = KV_TRANSFER  # kvbench/benches/declared.py

    def _shape(self, params: dict[str, Any]) -> KVShape:
        return KVShape.of(get_model(params["model"]), params["block_tokens"], params["dtype"], params["tp"])

    def _blocks(self, params: dict[str, Any]) -> tuple[int, int]:
        blocks = params["tokens"] // params["block_tokens"]
        if burst.wanted(params):
            return blocks, burst.pool_blocks(params, blocks)
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
        refuse_load(params, None if self.direction == "restore" and self._family(params) is cuda
                    and parse_kind(params["dst"]).name == "device"
                    else "it runs beside kv.restore's CUDA strategy copies into GPU memory (dst=device)")
        validate_transport(params)
        if uses_mooncake(params) and (params["strategy"] != "nixl" or parse_kind(params["src"]).name != "remote"
                                      or params["via"] != "none" or self.direction != "restore"):
            raise BadInput(f"bad transport={params['transport']}: Mooncake restores from src=remote with "
                           "strategy=nixl and via=none")
        if burst.wanted(params):
            if self.direction != "restore":
                raise BadInput("bad requests= or mode=push with kv.offload: bursts are kv.restore's (mode=push is the "
                               "prefill side's write)")
            burst.check_params(params)
            if uses_mooncake(params):
                raise BadInput(f"bad transport={params['transport']} with requests={params['requests']} "
                               f"mode={params['mode']}: bursts of requests run over NIXL (transport=nixl)")
        if params["via"] != "none":
            twohop.check_params(params)
        elif self._family(params) is nixl:
            nixl.check_params(params)
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

    def _family(self, params: dict[str, Any]) -> ModuleType:
        if burst.wanted(params):
            return burst  # R requests at once, pulled or pushed, beside the wire ceiling
        if params["via"] != "none":
            return twohop  # NIXL reads into staging, the strategy scatters: a family of its own
        return FAMILIES[get_executor(params["strategy"]).family]

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        return self._family(params).unavailable_reason(params, self.direction)

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return self._family(params).path(params)

    def prepare(self, params: dict[str, Any]) -> Prepared:
        shape = self._shape(params)
        blocks, pool = self._blocks(params)
        selection = "sequential" if "contiguous" in (params["src_layout"], params["dst_layout"]) else params["selection"]
        picked = pick_blocks(blocks, pool, selection, params["seed"])
        descriptors = restore_descriptors(shape, params["src_layout"], params["dst_layout"], picked, pool)
        case = KVCase(params, self.direction, shape, descriptors, region_bytes(params["src_layout"], shape, pool),
                      region_bytes(params["dst_layout"], shape, blocks),
                      layout_metadata(shape, blocks, pool, len(descriptors), selection), picked)
        prepared = self._family(params).prepare(case)
        if params["load"] != "none":
            prepared = with_load(prepared, params["load"], parse_kind(params["dst"]).index or 0)
        if self.direction != "restore" or burst.wanted(params):
            return prepared  # a burst times each of its requests itself (request_ms)
        # A restore is also one request a serving engine waits on: REQUESTS of them timed one by one.
        prepared.workload.requests = REQUESTS
        derive = prepared.derive
        return replace(prepared, derive=lambda m: {**derive(m), REQUEST_MS: m.request_ms()})


@register
class KVRestore(_KVTransfer):
    id = "kv.restore"
    description = "restore a model's KV blocks from a pool into serving layout (bytes once)"
    direction = "restore"
    operation = "READ"  # src=remote: this side pulls the pool's blocks from the peer (kvbench/cluster/rank.py)


@register
class KVOffload(_KVTransfer):
    id = "kv.offload"
    description = "offload a model's KV blocks from serving layout back into a pool"
    direction = "offload"
