"""Two-hop KV restores (`via=pageable|pinned`): the way LMCache and KVDrive restore from SSD or a
remote pool — read large contiguous chunks through a staging buffer in host memory, then scatter
them into the serving layout.

The restored blocks are read whole (a `page_first` or `contiguous` pool keeps each block in one
piece), `chunk` bytes of them at a time, by NIXL (POSIX from a file, UCX from another agent) into
one of two staging buffers; the `strategy` executor then scatters each chunk's fragments into
`dst`. With `pipeline=on` chunk k+1 is read while chunk k is scattered; `pipeline=off` does one
after the other, the sum of both legs.

Each result records its legs timed alone (`legs`: seconds of the read leg and of the scatter leg
for one restore) and the `overlap` the pipeline achieved: the fraction of the shorter leg hidden
behind the longer, (read + scatter − total) / min(read, scatter). The reset poisons the staging
buffers with the destination, so a restore whose reads did not happen cannot pass its check.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.nixl import PreparedTransfer, backend_unavailable_reason, desc_array
from kvbench.benches.base import Prepared
from kvbench.benches.kv import nixl
from kvbench.benches.kv.case import KVCase, rates
from kvbench.errors import BadInput, IntegrityError
from kvbench.executors.host import max_threads
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.layouts import unit_offsets
from kvbench.measure.engine import Workload
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import allocate, kind_unavailable_reason, parse_kind
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import POISON

STAGES = 2  # staging buffers: one being read into while the other is scattered from
LEG_REPEATS = 3  # each leg timed alone this many times after the samples (median kept)
SOURCE_LAYOUTS = ("page_first", "contiguous")  # layouts that keep each block in one piece


def check_params(params: dict[str, Any]) -> None:
    """What a two-hop restore needs, refused at the edge with the reason."""
    if parse_kind(params["src"]).name not in ("file", "remote"):
        raise BadInput(f"bad via={params['via']} with src={params['src']}: two-hop restores read from src=file or "
                       "src=remote (direct DRAM copies need no staging)")
    if params["src_layout"] not in SOURCE_LAYOUTS:
        raise BadInput(f"bad via={params['via']} with src_layout={params['src_layout']}: staging reads whole blocks, "
                       f"so the pool must keep each block in one piece ({' or '.join(SOURCE_LAYOUTS)})")
    executor = get_executor(params["strategy"])
    if executor.family == "nixl" or executor.ceiling:
        raise BadInput(f"bad strategy={params['strategy']} with via={params['via']}: the strategy scatters each chunk "
                       "into the serving layout (host or host-numpy here; a CUDA strategy into dst=device)")


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    if direction != "restore":
        return "via= stages restores only"
    src = parse_kind(params["src"]).name
    reason = backend_unavailable_reason("POSIX" if src == "file" else "UCX")
    if reason:
        return reason
    if parse_kind(params["dst"]).name == "device":
        return ("two-hop into GPU memory (a CUDA strategy scattering from the staging buffer) is not built yet: "
                "it needs a GPU to be developed against; use a host dst")
    staging = kind_unavailable_reason(parse_kind(params["via"]))
    if staging:  # page-locked staging needs CUDA to register it
        return f"via={params['via']}: {staging}"
    if get_executor(params["strategy"]).family != "host":
        return f"strategy={params['strategy']} scatters into GPU memory; with a host dst use host or host-numpy"
    if params["concurrency"] > max_threads():
        return f"concurrency={params['concurrency']} but this host runs at most {max_threads()} copy threads"
    return None


def path(params: dict[str, Any]) -> list[Segment]:
    return [*nixl.path(params), ("dram_copy",)]


def chunk_blocks(block_bytes: int, chunk_bytes: int, blocks: int) -> list[range]:
    """Slots of the restore grouped into chunks of whole blocks, at most `chunk_bytes` each (at least
    one block)."""
    per = max(1, chunk_bytes // block_bytes)
    return [range(start, min(start + per, blocks)) for start in range(0, blocks, per)]


def scatter_descriptors(case: KVCase, slots: range) -> DescriptorList:
    """A chunk's fragments: from the staging buffer (its blocks back to back, each in page_first
    order) into their slots of the destination layout."""
    shape = case.shape
    staged = unit_offsets("page_first", shape, np.arange(len(slots), dtype=np.int64), len(slots))
    placed = unit_offsets(case.params["dst_layout"], shape, np.asarray(slots, dtype=np.int64), len(case.src_blocks))
    length = np.full(staged.size, shape.unit_bytes, dtype=np.uint64)
    return DescriptorList.from_arrays(staged.ravel(), placed.ravel(), length).coalesce()


def prepare(case: KVCase) -> Prepared:
    params, shape = case.params, case.shape
    blocks = case.src_blocks
    chunks = chunk_blocks(shape.block_bytes, params["chunk"], len(blocks))
    stage_bytes = max(len(c) for c in chunks) * shape.block_bytes
    # Whole blocks, read from the pool: source offsets in pool coordinates, staging offsets per chunk
    block_reads = [DescriptorList.from_arrays(
        np.asarray(blocks[c.start:c.stop], dtype=np.uint64) * np.uint64(shape.block_bytes),
        np.arange(len(c), dtype=np.uint64) * np.uint64(shape.block_bytes),
        np.full(len(c), shape.block_bytes, dtype=np.uint64)) for c in chunks]
    expected = np.full(case.pool_bytes, POISON, dtype=np.uint8)  # filled by the pool's source; the check refuses poison
    with ExitStack() as stack:
        guarded = stack.enter_context(GuardedRegion(params["dst"], case.moved_bytes, case.descriptors.dst_offset,
                                                    case.descriptors.length))
        dst = guarded.region
        stages = [stack.enter_context(allocate(params["via"], stage_bytes)) for _ in range(STAGES)]
        mem_type = nixl_memory(stages[0])[0]
        bases = [nixl_memory(s)[1] for s in stages]
        local = desc_array(np.array(bases, dtype=np.uint64), np.full(STAGES, stage_bytes, dtype=np.uint64), 0)
        all_reads = DescriptorList.from_arrays(*(np.concatenate([getattr(r, f) for r in block_reads])
                                                 for f in ("src_offset", "dst_offset", "length")))
        from_file = parse_kind(params["src"]).name == "file"
        source, meta = (nixl.file_source if from_file else nixl.peer_source)(
            case, expected, stack, lambda agent: agent.register_memory(local, mem_type), all_reads)
        reads: list[PreparedTransfer] = []
        stack.callback(lambda: [t.release() for t in reads])
        for k, part in enumerate(block_reads):
            rows = desc_array(bases[k % STAGES] + part.dst_offset, part.length, 0)
            reads.append(PreparedTransfer(source.agent, "READ", rows, mem_type, source.rows(part), source.mem_type,
                                          source.remote_agent, list(source.backends), timeout_s=source.timeout_s))
        executor = get_executor(params["strategy"])
        scatters = [executor.bind(stages[k % STAGES], dst, scatter_descriptors(case, c), params["concurrency"])
                    for k, c in enumerate(chunks)]
        cleanup = stack.pop_all()

    def read_leg() -> None:
        for transfer in reads:
            transfer.run()

    def scatter_leg() -> None:
        for scatter in scatters:
            scatter()

    if params["pipeline"] == "on":
        def run() -> None:
            reads[0].post()
            for k, scatter in enumerate(scatters):
                reads[k].wait()
                if k + 1 < len(reads):
                    reads[k + 1].post()  # into the other buffer, whose scatter (k - 1) has returned
                scatter()
    else:
        def run() -> None:
            for transfer, scatter in zip(reads, scatters, strict=True):
                transfer.run()
                scatter()

    def reset() -> None:
        guarded.poison()
        for stage in stages:  # stale chunks in the staging buffers must not pass for fresh reads
            stage.poison()

    def check() -> None:
        row = first_mismatch(case.descriptors, expected, dst.host_array, POISON)
        if row is not None:
            raise IntegrityError(f"fragment {row} of {len(case.descriptors)} restored wrong")
        guarded.check()

    def derive(m) -> dict[str, Any]:
        read_s, scatter_s = (_median_time(leg) for leg in (read_leg, scatter_leg))
        total = m.summary.median
        overlap = (read_s + scatter_s - total) / min(read_s, scatter_s) if min(read_s, scatter_s) > 0 else 0.0
        return {**rates(params["tokens"], len(case.descriptors), m), "legs": {"read_s": read_s, "scatter_s": scatter_s},
                "overlap": float(min(1.0, max(0.0, overlap)))}

    metadata = {**case.layout, **meta, "nixl_backend": reads[0].backend, "fragments": len(case.descriptors),
                "chunks": len(chunks), "chunk_bytes": stage_bytes, "staging_buffers": STAGES,
                "buffers": {"dst": dst.describe(), "staging": stages[0].describe(), **meta.get("buffers", {})}}
    return Prepared(Workload(case.descriptors.total_bytes, run, reset, check), metadata, cleanup.close, derive)


def _median_time(leg) -> float:
    times = []
    for _ in range(LEG_REPEATS):
        start = time.perf_counter()
        leg()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
