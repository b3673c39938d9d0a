"""KV restore from the tiers NIXL reaches: a file (POSIX) or another agent's memory (UCX).

The descriptor list is the same one every strategy gets; here its source offsets address a
pool that lives in a file (one for the pool, or one per block) or in a peer's buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.backends.nixl import PreparedTransfer, backend_unavailable_reason, desc_array, make_agent
from kvbench.benches.base import Prepared
from kvbench.errors import BadInput, IntegrityError
from kvbench.kv.check import first_mismatch
from kvbench.kv.descriptors import DescriptorList
from kvbench.kv.layouts import KVShape
from kvbench.measure.engine import Workload
from kvbench.measure.measurement import Measurement
from kvbench.memory.files import create_files
from kvbench.memory.kinds import allocate, kind_unavailable_reason, parse_kind
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import fill_pattern
from kvbench.net_peers import InprocPeer, ProcessPeer, free_port
from kvbench.peer import PATTERN_SEED

REQUEST_ROWS = 8192  # descriptors per NIXL request; larger restores post several
IN_FLIGHT = 4  # requests posted before waiting: the POSIX plugin holds 65,536 I/Os at most


def unavailable_reason(params: dict[str, Any], direction: str) -> str | None:
    src = parse_kind(params["src"]).name
    if direction != "restore" or src not in ("file", "remote"):
        return "strategy nixl serves kv.restore from src=file or src=remote"
    reason = backend_unavailable_reason("POSIX" if src == "file" else "UCX")
    if reason:
        return reason
    if src == "file" and params["file_layout"] == "per_block" and params["src_layout"] not in ("page_first", "contiguous"):
        return "file_layout=per_block stores each block whole: use src_layout=page_first"
    return kind_unavailable_reason(parse_kind(params["dst"]))


def _aligned(descriptors: DescriptorList, alignment: int = 4096) -> bool:
    return bool(((descriptors.src_offset % alignment == 0) & (descriptors.length % alignment == 0)).all())


def _chunks(n: int) -> list[slice]:
    return [slice(i, min(i + REQUEST_ROWS, n)) for i in range(0, n, REQUEST_ROWS)]


def prepare_restore(params: dict[str, Any], shape: KVShape, descriptors: DescriptorList, pool_bytes: int,
                    moved_bytes: int, layout: dict[str, Any]) -> Prepared:
    """`layout`: what the KV case records whatever its strategy (kv.layout_metadata)."""
    src = parse_kind(params["src"]).name
    dst = allocate(params["dst"], moved_bytes)
    closers = [dst.close]
    try:
        mem_type, base, device = nixl_memory(dst)
        local = desc_array(base + descriptors.dst_offset, descriptors.length, device)
        expected = np.empty(pool_bytes, dtype=np.uint8)  # what the pool holds, to check against

        def register_dst(agent) -> None:
            agent.register_memory(desc_array(np.array([base]), np.array([moved_bytes]), device), mem_type)

        source = _from_file if src == "file" else _from_peer
        transfers, meta = source(params, shape, descriptors, pool_bytes, local, mem_type, expected, closers,
                                 register_dst)
    except BaseException:
        for close in reversed(closers):
            close()
        raise

    def run() -> None:
        for start in range(0, len(transfers), IN_FLIGHT):
            window = transfers[start:start + IN_FLIGHT]
            for t in window:
                t.post()
            for t in window:
                t.wait()

    def check() -> None:
        got = dst.host_array if dst.host_array is not None else dst.device_array.get()
        row = first_mismatch(descriptors, expected, got)
        if row is not None:
            raise IntegrityError(f"fragment {row} of {len(descriptors)} restored wrong")

    def reset() -> None:
        dst.poison()

    def derive(m: Measurement) -> dict[str, Any]:
        median = m.summary.median
        return {"tokens_per_s": params["tokens"] / median, "us_per_fragment": median / len(descriptors) * 1e6,
                "telemetry": transfers[0].telemetry()}

    metadata = {**layout, **meta, "nixl_backend": transfers[0].backend, "requests": len(transfers),
                "fragments": len(descriptors), "buffers": {"dst": dst.describe(), **meta.get("buffers", {})}}

    def close() -> None:
        for t in transfers:
            t.release()
        for closer in reversed(closers):
            closer()

    return Prepared(Workload(descriptors.total_bytes, run, reset, check), metadata, close, derive)


def _from_file(params, shape, descriptors, pool_bytes, local, mem_type, expected, closers, register_dst):
    per_block = params["file_layout"] == "per_block"
    direct = _aligned(descriptors)  # O_DIRECT needs 4 KiB-aligned offsets and lengths
    count, size = (pool_bytes // shape.block_bytes, shape.block_bytes) if per_block else (1, pool_bytes)
    files = create_files(None, count, size, direct=direct, writable=False)
    closers.append(files.close)
    for i in range(count):
        fill_pattern(expected[i * size:(i + 1) * size], seed=i)  # create_files wrote exactly this
    agent = make_agent(f"kvbench-kvfile-{id(files)}", ["POSIX"])
    register_dst(agent)
    agent.register_memory([(0, size, fd, "") for fd in files.fds], "FILE")
    index, offset = np.divmod(descriptors.src_offset, np.uint64(size))
    remote = desc_array(offset, descriptors.length, np.array(files.fds, dtype=np.uint64)[index.astype(np.int64)])
    transfers = [PreparedTransfer(agent, "READ", local[s], mem_type, remote[s], "FILE", agent.name, ["POSIX"])
                 for s in _chunks(len(descriptors))]
    meta = {"files": count, "file_bytes": size, "direct": files.direct, "page_cache": not files.direct,
            "filesystem": files.mount}
    if not files.direct:
        meta["warning"] = ("fragments not 4 KiB aligned: read through the page cache" if not direct
                           else f"{files.mount.get('fstype')} refused O_DIRECT: read through the page cache")
    return transfers, meta


def _from_peer(params, shape, descriptors, pool_bytes, local, mem_type, expected, closers, register_dst):
    fill_pattern(expected, seed=PATTERN_SEED)
    listen = free_port() if params["peer"] == "local" else None
    agent = make_agent(f"kvbench-kvremote-{id(expected)}", ["UCX"], listen_port=listen)
    register_dst(agent)
    if params["peer"] == "inproc":
        peer = InprocPeer(agent, pool_bytes, "pageable", PATTERN_SEED)
    else:
        peer = ProcessPeer(agent, listen, pool_bytes, "pageable", PATTERN_SEED, 30.0)
    closers.append(peer.close)
    remote = desc_array(peer.base + descriptors.src_offset, descriptors.length, peer.device)
    transfers = [PreparedTransfer(agent, "READ", local[s], mem_type, remote[s], peer.mem_type, peer.name, ["UCX"])
                 for s in _chunks(len(descriptors))]
    return transfers, {"buffers": {"src": peer.describe()}}


def path(params: dict[str, Any]) -> list:
    """The tier the pool lives in: the file's device, or the peer (no link peak on this host)."""
    import tempfile

    from kvbench.memory.files import mount_of

    if parse_kind(params["src"]).name == "file":
        return [("storage", mount_of(tempfile.gettempdir())["device"])]
    return [("loopback", params["peer"])]


def check_nixl_params(params: dict[str, Any]) -> None:
    if params["strategy"] == "nixl" and parse_kind(params["src"]).name not in ("file", "remote"):
        raise BadInput(f"bad strategy=nixl with src={params['src']}: nixl restores from src=file or src=remote")
