"""KV restore from the tiers NIXL reaches: a file (POSIX) or another agent's memory (UCX), with the
`nixl` executor (kvbench/executors/nixl.py).

The descriptor list is the same one every strategy gets; here its source offsets address a
pool that lives in a file (one for the pool, or one per block) or in a peer's buffer.
"""

from __future__ import annotations

import os
import socket
import tempfile
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.nixl import backend_unavailable_reason, desc_array, make_agent
from kvbench.benches.base import Prepared
from kvbench.benches.kv.case import KVCase, rates
from kvbench.benches.transport import (
    AGAINST_NIXL,
    mooncake_batch,
    transport_unavailable_reason,
    uses_mooncake,
    uses_nixl_data,
)
from kvbench.errors import BadInput, IntegrityError
from kvbench.executors.nixl import REQUEST_ROWS, NixlSource
from kvbench.executors.registry import get_executor
from kvbench.hardware.path import Segment
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure.engine import Pair, Workload
from kvbench.memory.files import create_files, mount_of
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.kinds import kind_unavailable_reason, parse_kind
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import POISON, fill_pattern
from kvbench.peers.initiator import InprocPeer, ProcessPeer, RemotePeer
from kvbench.peers.protocol import PATTERN_SEED, on_free_port


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    src = parse_kind(params["src"]).name
    if direction != "restore" or src not in ("file", "remote"):
        return "strategy nixl serves kv.restore from src=file or src=remote"
    reason = backend_unavailable_reason("POSIX" if src == "file" else "UCX") or transport_unavailable_reason(params)
    if reason:
        return reason
    if src == "file" and params["file_layout"] == "per_block" and params["src_layout"] not in ("page_first", "contiguous"):
        return "file_layout=per_block stores each block whole: use src_layout=page_first"
    return kind_unavailable_reason(parse_kind(params["dst"]))


def check_params(params: dict[str, Any]) -> None:
    if parse_kind(params["src"]).name not in ("file", "remote"):
        raise BadInput(f"bad strategy=nixl with src={params['src']}: nixl restores from src=file or src=remote")


def path(params: dict[str, Any]) -> list[Segment]:
    """The tier the pool lives in: the file's device, a peer on another host, or one on this host (no
    link peak)."""
    if parse_kind(params["src"]).name == "file":
        return [("storage", mount_of(tempfile.gettempdir())["device"], "read")]
    if params["peer"] == "remote":
        return [("remote_peer", params["peer_addr"])]
    return [("loopback", params["peer"])]


def _aligned(descriptors: DescriptorList, alignment: int = 4096) -> bool:
    return bool(((descriptors.src_offset % alignment == 0) & (descriptors.length % alignment == 0)).all())


def prepare(case: KVCase) -> Prepared:
    params, descriptors = case.params, case.descriptors
    expected = np.full(case.pool_bytes, POISON, dtype=np.uint8)  # what the pool holds, to check against
    with ExitStack() as stack:
        guarded = stack.enter_context(GuardedRegion(params["dst"], case.moved_bytes, descriptors.dst_offset,
                                                    descriptors.length))
        dst = guarded.region
        mem_type, base, device = nixl_memory(dst)
        whole_dst = desc_array(np.array([base]), np.array([case.moved_bytes]), device)
        from_file = parse_kind(params["src"]).name == "file"
        source, meta = (file_source if from_file else peer_source)(case, expected, stack, lambda a: a.register_memory(
            whole_dst, mem_type))
        run = get_executor("nixl").bind(source, dst, descriptors)
        stack.callback(run.close)
        mooncake = None
        if not from_file and uses_mooncake(params):  # the same fragments over Mooncake, 8,192 a batch (TCP: its queue)
            mooncake = mooncake_batch(params, "READ", dst, source.peer, [int(o) for o in descriptors.dst_offset],
                                      [int(n) for n in descriptors.length], stack,
                                      remote_offsets=[int(o) for o in descriptors.src_offset], rows=REQUEST_ROWS)
            meta = {**meta, "mooncake": mooncake[1]}
        cleanup = stack.pop_all()

    def check() -> None:
        whole = guarded.host_bytes()
        row = first_mismatch(descriptors, expected, guarded.inner(whole), POISON)
        if row is not None:
            raise IntegrityError(f"fragment {row} of {len(descriptors)} restored wrong")
        guarded.check(whole)

    def derive(m) -> dict[str, Any]:
        return {**rates(params["tokens"], len(descriptors), m), "telemetry": run.telemetry()}

    nixl_moves = mooncake is None or uses_nixl_data(params)
    metadata = {**case.layout, **meta, "nixl_backend": run.backend if nixl_moves else None,
                "requests": len(run.transfers) if nixl_moves else mooncake[1]["batches"],
                "fragments": len(descriptors), "buffers": {"dst": dst.describe(), **meta.get("buffers", {})},
                **({"transport": params["transport"]} if "transport" in params else {})}
    if mooncake is None:
        return Prepared(Workload(descriptors.total_bytes, run, guarded.poison, check), metadata, cleanup.close, derive)
    workload = Workload(descriptors.total_bytes, mooncake[0], guarded.poison, check)
    if nixl_moves:  # transport=both: NIXL's requests on the same buffers, timed interleaved with Mooncake's
        workload.pair = Pair(AGAINST_NIXL, Workload(descriptors.total_bytes, run, guarded.poison, check))
    return Prepared(workload, metadata, cleanup.close, derive)


def file_source(case: KVCase, expected: np.ndarray, stack: ExitStack, register_dst,
                reads: DescriptorList | None = None) -> tuple[NixlSource, dict]:
    """The pool in a file (or one per block), filled with the pattern `expected` receives; `reads`:
    the pieces that will be read from it (default: the case's fragments), for O_DIRECT alignment."""
    per_block = case.params["file_layout"] == "per_block"
    direct = _aligned(reads if reads is not None else case.descriptors)  # O_DIRECT: 4 KiB-aligned offsets, lengths
    count, size = (case.pool_bytes // case.shape.block_bytes, case.shape.block_bytes) if per_block else (1, case.pool_bytes)
    files = stack.enter_context(create_files(None, count, size, direct=direct, writable=False))
    for i in range(count):
        fill_pattern(expected[i * size:(i + 1) * size], seed=i)  # create_files wrote exactly this
    agent = make_agent(f"kvbench-kvfile-{id(files)}", ["POSIX"])
    register_dst(agent)
    agent.register_memory([(0, size, fd, "") for fd in files.fds], "FILE")
    fds = np.array(files.fds, dtype=np.uint64)

    def rows(descriptors: DescriptorList) -> np.ndarray:
        index, offset = np.divmod(descriptors.src_offset, np.uint64(size))
        return desc_array(offset, descriptors.length, fds[index.astype(np.int64)])

    meta = {"files": count, "file_bytes": size, "direct": files.direct, "page_cache": not files.direct,
            "filesystem": files.mount}
    if not files.direct:
        meta["warning"] = ("fragments not 4 KiB aligned: read through the page cache" if not direct
                           else f"{files.mount.get('fstype')} refused O_DIRECT: read through the page cache")
    return NixlSource(agent, "FILE", agent.name, ("POSIX",), rows), meta


def peer_source(case: KVCase, expected: np.ndarray, stack: ExitStack, register_dst,
                reads: DescriptorList | None = None) -> tuple[NixlSource, dict]:
    """The pool in another agent's memory: in this process, a peer process on loopback, or a peer a
    launcher started (peer=remote, at peer_addr:peer_port), which allocates the pool in its own
    memory kind when asked (OPEN:<pool bytes>) and fills it as every peer does (fill_region with
    PATTERN_SEED): the bytes `expected` holds."""
    params = case.params
    fill_pattern(expected, seed=PATTERN_SEED)
    remote = params["peer"] == "remote"
    # A launched peer serves several initiators at once (an incast): the name is unique to its host and process.
    name = f"kvbench-kvinit-{socket.gethostname()}-{os.getpid()}" if remote else f"kvbench-kvremote-{id(expected)}"
    # a peer in another process reaches this agent through its listener; an agent in this process needs none
    agent, listen = (on_free_port(lambda port: make_agent(name, ["UCX"], listen_port=port))
                     if params["peer"] != "inproc" else (make_agent(name, ["UCX"]), None))
    register_dst(agent)
    if params["peer"] == "inproc":
        peer = InprocPeer(agent, case.pool_bytes, "pageable", PATTERN_SEED)
    elif remote:
        peer = RemotePeer(agent, params["peer_name"], params["peer_addr"], params["peer_port"], case.pool_bytes,
                          params["timeout_s"], ask=True)
    else:
        peer = ProcessPeer(agent, listen, case.pool_bytes, "pageable", PATTERN_SEED, params["timeout_s"])
    stack.callback(peer.close)

    def rows(descriptors: DescriptorList) -> np.ndarray:
        return desc_array(peer.base + descriptors.src_offset, descriptors.length, peer.device)

    return (NixlSource(agent, peer.mem_type, peer.name, ("UCX",), rows, timeout_s=params["timeout_s"], peer=peer),
            {"buffers": {"src": peer.describe()}})
