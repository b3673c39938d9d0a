"""Mooncake's Transfer Engine, the second data plane for network transfers beside NIXL: import,
availability, one engine per side, and one prepared batch that a measurement posts again and again.

The wheel (`pip install mooncake-transfer-engine`, or `-cuda13` on CUDA 13 hosts) links the CUDA
runtime (libcudart, from pip's nvidia-cuda-runtime package, loaded here when it is there) and the
CUDA driver (libcuda.so.1), which only a GPU host has: elsewhere the engine does not import and
every Mooncake case is skipped with that reason. kvbench never ships or loads a stand-in driver
(the tests bring their own, and give it only to their child processes).

An engine is started with a metadata mode — `P2PHANDSHAKE` (the peers exchange segment
descriptors directly; the default), `etcd://host:port`, `http://host:port/metadata` or
`redis://host:port` — and a protocol: `tcp`, or `rdma` with the NIC named. Both are recorded with
every result.
"""

from __future__ import annotations

import ctypes
import functools
import os
import socket
from importlib import metadata as dist_metadata
from types import ModuleType

from kvbench.backends.nixl import find_library
from kvbench.errors import BadInput, one_line
from kvbench.hardware import optional

P2P = "P2PHANDSHAKE"
PROTOCOLS = ("tcp", "rdma")
METADATA_SCHEMES = ("etcd://", "http://", "https://", "redis://")
DISTRIBUTIONS = ("mooncake-transfer-engine", "mooncake-transfer-engine-cuda13", "mooncake-transfer-engine-non-cuda")
CUDA_RUNTIMES = ("libcudart.so.12", "libcudart.so.13")
INSTALL_HINT = "pip install mooncake-transfer-engine nvidia-cuda-runtime-cu12 (mooncake-transfer-engine-cuda13 on CUDA 13)"
# Mooncake's TCP transport queues at most this many transfers per peer (1024 unless the environment says
# otherwise; 0.3.13 takes 1 to at least 16,384 and falls back to 1024 past its range) and refuses the rest of
# a batch ("TCP lane queue-full rejection"): the whole batch then fails with status -1. A batch of
# 8,192 fragments failed from 2,049 or so (1,024 queued, 1,024 awaiting admission); so over TCP a batch
# holds at most the queue.
TCP_QUEUE_ENV, TCP_QUEUE_DEFAULT, TCP_QUEUE_MAX = "MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER", 1024, 16384


def check_metadata(value: str) -> str:
    """`value` when it names a metadata mode Mooncake takes, else `BadInput` naming it."""
    if value == P2P or value.startswith(METADATA_SCHEMES) and len(value) > value.index("//") + 2:
        return value
    raise BadInput(f"bad mooncake_metadata={value!r}: expected {P2P}, etcd://HOST:PORT, http://HOST:PORT/PATH "
                   "or redis://HOST:PORT")


@functools.cache
def _import() -> tuple[ModuleType | None, str | None]:
    # Mooncake logs every connection (INFO) and its CPU-only fallbacks (WARNING) through glog to this
    # process's standard error, between the progress lines; errors still show.
    os.environ.setdefault("MC_LOG_LEVEL", "ERROR")
    os.environ.setdefault("GLOG_minloglevel", "1")
    missing = f"Mooncake Transfer Engine is not installed ({INSTALL_HINT})"
    try:  # the package: tells a missing wheel from a wheel that cannot load (any error, bounded in time)
        optional.load("mooncake")
    except ImportError as exc:
        return None, optional.why(exc, missing)
    for soname in CUDA_RUNTIMES:  # pip's runtime is not on the loader path; the engine finds it once loaded
        path = find_library(soname)
        if path:
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    try:
        engine = optional.load("mooncake.engine")
    except ImportError as exc:
        text = str(exc)
        if isinstance(exc, optional.NotLoaded) and "libcuda" not in text:
            return None, f"Mooncake's engine does not load: {text[:240]}"
        if "libcuda.so" in text:
            return None, ("Mooncake's engine needs the CUDA driver (libcuda.so.1), which this host does not have: "
                          f"{one_line(text)[:160]}")
        if "libcudart" in text:
            return None, f"Mooncake's engine needs the CUDA runtime: {one_line(text)[:160]} ({INSTALL_HINT})"
        return None, f"Mooncake's engine does not load: {one_line(text)[:200]}"
    return engine, None


def mooncake_unavailable_reason() -> str | None:
    """None when Mooncake's Transfer Engine loads here, else why not (one line)."""
    return _import()[1]


def mooncake_version() -> str | None:
    for dist in DISTRIBUTIONS:
        try:
            return f"{dist} {dist_metadata.version(dist)}"
        except dist_metadata.PackageNotFoundError:
            continue
    return None


def batch_limit(protocol: str) -> int | None:
    """The most transfers one Mooncake batch may hold with `protocol` (None: no limit kvbench knows of):
    over TCP, the per-peer queue the engine is started with (`MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER`)."""
    if protocol != "tcp":
        return None
    try:
        given = int(os.environ.get(TCP_QUEUE_ENV, ""))
    except ValueError:
        return TCP_QUEUE_DEFAULT
    return given if 1 <= given <= TCP_QUEUE_MAX else TCP_QUEUE_DEFAULT


def local_address_towards(address: str) -> str:
    """This host's address on the route to `address` (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((address, 9))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class Engine:
    """One Transfer Engine on `address` (an IP this host has); `segment` is the name its peers
    reach it by: `address:rpc_port` with the P2P handshake, the name it registered otherwise."""

    def __init__(self, address: str, metadata: str, protocol: str, device: str, timeout_s: float) -> None:
        api, reason = _import()
        if api is None:
            raise RuntimeError(reason)
        # Every synchronous transfer, and every TCP wait, is bounded by the case's timeout: a peer that
        # stopped answering fails the case instead of holding it (read by the engine when it starts).
        for name in ("MC_TRANSFER_TIMEOUT", "MC_TCP_STATUS_TIMEOUT_SEC", "MC_TCP_PROGRESS_TIMEOUT_SEC"):
            os.environ[name] = str(max(1, int(timeout_s)))
        self.metadata, self.protocol, self.device = metadata, protocol, device
        name = address if metadata == P2P else f"{address}:{_free_port(address)}"
        self.engine = api.TransferEngine()
        status = self.engine.initialize(name, metadata, protocol, device)
        if status != 0:
            raise RuntimeError(f"Mooncake engine did not start (initialize returned {status}) with metadata={metadata} "
                               f"protocol={protocol}{' device=' + device if device else ''}")
        self.segment = f"{address}:{self.engine.get_rpc_port()}" if metadata == P2P else name
        self._registered: dict[int, int] = {}

    def register(self, base: int, size: int) -> None:
        """Register `size` bytes at `base` (host or GPU memory), once."""
        if base in self._registered:
            return
        status = self.engine.register_memory(base, size)
        if status != 0:
            raise RuntimeError(f"Mooncake could not register {size} bytes at {base:#x} (status {status})")
        self._registered[base] = size

    def unregister(self, base: int) -> None:
        if self._registered.pop(base, None) is not None:
            try:
                self.engine.unregister_memory(base)
            except Exception:
                pass

    def describe(self) -> dict[str, str]:
        return {"metadata": self.metadata, "protocol": self.protocol, "device": self.device, "segment": self.segment}

    def close(self) -> None:
        for base in list(self._registered):
            self.unregister(base)


class MooncakeTransfer:
    """One batch of `len(lengths)` transfers to the segment `target`, its address lists built once;
    `run()` submits it and returns when every one is done (the engine's own deadline bounds it)."""

    def __init__(self, engine: Engine, operation: str, target: str, local: list[int], remote: list[int],
                 lengths: list[int], timeout_s: float) -> None:
        if operation not in ("READ", "WRITE"):
            raise ValueError(f"operation {operation!r}: READ or WRITE")
        self.engine, self.operation, self.target, self.timeout_s = engine, operation, target, timeout_s
        self.local, self.remote, self.lengths = list(local), list(remote), list(lengths)
        call = (engine.engine.batch_transfer_sync_write if operation == "WRITE"
                else engine.engine.batch_transfer_sync_read)
        self._call = call

    def run(self) -> None:
        status = self._call(self.target, self.local, self.remote, self.lengths)
        if status != 0:
            raise RuntimeError(f"Mooncake transfer failed (status {status}) to segment {self.target}: the peer is "
                               f"gone, refused it, or did not finish within {self.timeout_s:.0f} s")

    post = run  # the same two-step interface as NIXL's PreparedTransfer: the sync call already waited

    def wait(self) -> None:
        pass

    def telemetry(self) -> None:
        return None

    def release(self) -> None:
        pass
