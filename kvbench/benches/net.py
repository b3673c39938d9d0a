"""`net.write` / `net.read`: local memory ↔ a remote NIXL agent's memory over UCX, or over
Mooncake's Transfer Engine (`transport=mooncake`; `both` times one against the other:
kvbench/benches/transport.py).

Each operation is one NIXL request of `batch` descriptors of `block_size` bytes. The far side
is a second agent in this process (`peer=inproc`) or `python -m kvbench.cluster.peer` in another
process on this host (`peer=local`, metadata through NIXL's listener on 127.0.0.1).
`device` memory on either side asks UCX for GPUDirect RDMA; the result records the backend
NIXL chose.
"""

from __future__ import annotations

import os
import socket
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from kvbench.backends.nixl import (
    PreparedTransfer,
    backend_unavailable_reason,
    desc_array,
    make_agent,
    nixl_version,
)
from kvbench.backends.ucx_protocols import devices as ucx_devices
from kvbench.backends.ucx_protocols import log_since as ucx_log_since
from kvbench.backends.ucx_protocols import log_size as ucx_log_size
from kvbench.backends.ucx_protocols import parse as parse_protocols
from kvbench.backends.ucx_protocols import proto_info_enabled
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.declared import NET
from kvbench.benches.rails import COUNTER_NOTE, rail_bytes, rail_devices
from kvbench.benches.registry import register
from kvbench.benches.transport import (
    AGAINST_NIXL,
    mooncake_batch,
    transport_unavailable_reason,
    uses_mooncake,
    uses_nixl_data,
    validate_transport,
)
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.nic_counters import counter_deltas, read_counters
from kvbench.hardware.path import Segment
from kvbench.measure.engine import Pair, Workload
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import allocate, kind_unavailable_reason, parse_kind
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import fill_pattern
from kvbench.peers.initiator import InprocPeer, ProcessPeer, RemotePeer, connect_rail
from kvbench.peers.protocol import PATTERN_SEED, expected_crc, on_free_port

REMOTE_SEED, LOCAL_SEED = PATTERN_SEED, 23


# UCX variables whose values are stored with a result: those that choose transports, devices, rails
# and protocols. Any other UCX_* is stored by name only: its value may be a path, a key or a password.
_UCX_KEPT = ("UCX_TLS", "UCX_NET_DEVICES", "UCX_SOCKADDR_TLS_PRIORITY", "UCX_PROTO_ENABLE", "UCX_RNDV_SCHEME",
             "UCX_IB_GID_INDEX", "UCX_IB_PCI_RELAXED_ORDERING", "UCX_IB_ADDR_TYPE", "UCX_MEMTYPE_CACHE",
             "UCX_CM_USE_ALL_DEVICES", "UCX_USE_MT_MUTEX", "UCX_WARN_UNUSED_ENV_VARS")
_UCX_KEPT_SUFFIXES = ("_THRESH", "_RAILS", "_TLS", "_DEVICES", "_ENABLE")


def ucx_settings() -> dict[str, str]:
    """The UCX environment that decides transports and devices (what UCX picked is not exposed):
    allow-listed values, every other UCX_* variable by name with its value left out."""
    return {k: v if k in _UCX_KEPT or k.endswith(_UCX_KEPT_SUFFIXES) else "(set; value not recorded)"
            for k, v in os.environ.items() if k.startswith("UCX_")}


@contextmanager
def _ucx_env(settings: dict[str, str]) -> Iterator[None]:
    """UCX variables set while agents (and a local peer process) start: UCX reads them then."""
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _agent_on(name: str, rail: str | None, threads: int, listens: bool) -> tuple[Any, int | None]:
    """(an initiator agent whose UCX uses only `rail` (UCX_NET_DEVICES, read when UCX starts), the
    port of its NIXL listener: a free one, tried again when taken before NIXL bound it; None without one)."""
    def start(port: int | None):
        with _ucx_env({"UCX_NET_DEVICES": rail} if rail else {}):
            return make_agent(name, ["UCX"], threads, listen_port=port)

    return on_free_port(start) if listens else (start(None), None)


def _names(text: str) -> list[str]:
    return [r.strip() for r in text.split(",") if r.strip()]


def own_rails(params: dict[str, Any]) -> list[str]:
    """rails=a,b: the devices kvbench deals the batch over, one agent each ([] for rails=N or none)."""
    return [] if params["rails"].strip().isdigit() else _names(params["rails"])


def ucx_rails(params: dict[str, Any]) -> dict[str, str]:
    """rails=N and net_devices=a,b: the UCX settings that let UCX itself spread each request over up
    to N devices (UCX_MAX_RMA_RAILS: NIXL's reads and writes are UCX RMA; UCX_MAX_RNDV_RAILS: its
    rendezvous) among those named (UCX_NET_DEVICES)."""
    env = {}
    if params["rails"].strip().isdigit():
        env["UCX_MAX_RMA_RAILS"] = env["UCX_MAX_RNDV_RAILS"] = params["rails"].strip()
    if _names(params["net_devices"]):
        env["UCX_NET_DEVICES"] = ",".join(_names(params["net_devices"]))
    return env


class _Net(Benchmark):
    operation: str  # READ pulls remote → local, WRITE pushes local → remote
    params = NET  # kvbench/benches/declared.py

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        reason = backend_unavailable_reason("UCX") or transport_unavailable_reason(params)
        if reason:
            return reason
        for key in ("local", "remote"):
            kind = parse_kind(params[key])
            if kind.name not in ("pageable", "numa", "pinned", "device"):
                return f"{key}={params[key]}: not a memory kind NIXL can register"
            reason = kind_unavailable_reason(kind)
            if reason:
                return f"{key}={params[key]}: {reason}"
        return None

    def validate(self, params: dict[str, Any]) -> None:
        check_fits(2 * params["block_size"] * params["batch"], "local + remote buffers")
        if params["rails"].strip().isdigit() and int(params["rails"]) < 1:
            raise BadInput(f"bad rails={params['rails']}: give at least 1 rail, or the devices (mlx5_0:1,mlx5_1:1)")
        if own_rails(params) and _names(params["net_devices"]):
            raise BadInput("rails=a,b names the devices already: give net_devices only with rails=N")
        validate_transport(params)
        if uses_mooncake(params) and (params["rails"].strip() or params["net_devices"].strip()):
            raise BadInput(f"rails and net_devices are UCX's (NIXL's) settings: with transport={params['transport']} "
                           "give mooncake_device")

    def path(self, params: dict[str, Any]) -> list[Segment]:
        rails = own_rails(params) or _names(params["net_devices"])
        if params["rails"].strip().isdigit() and int(params["rails"]) < len(rails):
            rails = []  # UCX picks N of the devices named: which ones is its choice, so no sum is known
        gpu = next((k.index or 0 for k in (parse_kind(params["local"]),) if k.name == "device"), None)
        if rails and params["peer"] == "remote":
            return [("nic_rails", tuple(rails), gpu)]
        if params["peer"] == "remote":
            return [("remote_peer", params["peer_addr"])]
        return [("loopback", params["peer"])]

    def _connect(self, params: dict[str, Any], size: int, stack: ExitStack):
        """(agents, local region, peer, prepared transfers): one agent and request per rail; what
        needs freeing goes on `stack`."""
        rails = own_rails(params) or [None]
        # A launched peer serves several initiators at once (an incast): each name is unique to its host and process.
        name = (f"kvbench-init-{socket.gethostname()}-{os.getpid()}-{self.operation.lower()}" if params["peer"] == "remote"
                else f"kvbench-net-{os.getpid()}-{self.operation.lower()}")
        # every agent that talks to a peer in another process needs its own NIXL listener
        made = [_agent_on(name if i == 0 else f"{name}-rail{i}", rail, params["threads"], params["peer"] != "inproc")
                for i, rail in enumerate(rails)]
        agents, listen = [agent for agent, _ in made], made[0][1]
        region = stack.enter_context(allocate(params["local"], size))
        if params["peer"] == "inproc":
            peer = InprocPeer(agents[0], size, params["remote"], REMOTE_SEED)
        elif params["peer"] == "remote":
            peer = RemotePeer(agents[0], params["peer_name"], params["peer_addr"], params["peer_port"], size,
                              params["timeout_s"])
        else:
            peer = ProcessPeer(agents[0], listen, size, params["remote"], REMOTE_SEED, params["timeout_s"])
        stack.callback(peer.close)
        mem_type, base, device = nixl_memory(region)
        offsets = np.arange(params["batch"], dtype=np.uint64) * np.uint64(params["block_size"])
        lengths = np.full(params["batch"], params["block_size"])
        transfers = []
        for i, agent in enumerate(agents if uses_nixl_data(params) else []):
            if i:
                connect_rail(agent, peer, params["timeout_s"])
            agent.register_memory(desc_array(np.array([base]), np.array([size]), device), mem_type)
            mine = slice(i, None, len(agents))  # the batch is dealt over the rails
            transfers.append(PreparedTransfer(
                agent, self.operation, desc_array(base + offsets[mine], lengths[mine], device), mem_type,
                desc_array(peer.base + offsets[mine], lengths[mine], peer.device), peer.mem_type, peer.name,
                ["UCX"], timeout_s=params["timeout_s"]))
            stack.callback(transfers[-1].release)
        mooncake = (mooncake_batch(params, self.operation, region, peer, [int(o) for o in offsets],
                                   [int(n) for n in lengths], stack) if uses_mooncake(params) else None)
        return agents, region, peer, transfers, mooncake

    def prepare(self, params: dict[str, Any]) -> Prepared:
        size = params["block_size"] * params["batch"]
        offset = ucx_log_size()
        with ExitStack() as stack:
            # UCX logs which protocol, transport and device it picks; rails=N lets it spread over devices
            with proto_info_enabled(), _ucx_env(ucx_rails(params)):
                agents, region, peer, transfers, mooncake = self._connect(params, size, stack)

            def run_nixl() -> None:
                for t in transfers:
                    t.post()
                for t in transfers:
                    t.wait()

            if transfers:
                run_nixl()  # the first transfer makes UCX choose, and log, its protocols
            run = mooncake[0].run if mooncake else run_nixl
            cleanup = stack.pop_all()
        protocols = parse_protocols(ucx_log_since(offset))
        def local_bytes() -> np.ndarray:
            return region.host_array if region.host_array is not None else region.device_array.get()

        if self.operation == "WRITE":
            if region.host_array is not None:
                fill_pattern(region.host_array, seed=LOCAL_SEED)
            else:
                pattern = np.empty(size, dtype=np.uint8)
                fill_pattern(pattern, seed=LOCAL_SEED)
                region.device_array.set(pattern)
            want_crc = expected_crc(size, LOCAL_SEED)

            def reset() -> None:
                peer.poison()

            def check() -> None:
                if peer.crc() != want_crc:
                    raise IntegrityError("the peer's buffer does not hold the bytes written (crc32 differs)")
        else:
            want_crc = expected_crc(size, REMOTE_SEED)

            def reset() -> None:
                region.poison()

            def check() -> None:
                if zlib.crc32(memoryview(np.ascontiguousarray(local_bytes()))) != want_crc:
                    raise IntegrityError("the local buffer does not hold the peer's bytes (crc32 differs)")

        metadata = {
            "transport": params["transport"],
            **({"mooncake": mooncake[1]} if mooncake else {}),
            "nixl_backend": transfers[0].backend if transfers else None, "nixl_version": nixl_version(),
            "ucx_env": {**ucx_settings(), **ucx_rails(params)},  # what the agents started with
            "rails": own_rails(params) or _names(params["net_devices"]),
            "ucx_protocols": protocols, "ucx_devices": ucx_devices(protocols),
            "gpu_memory": any(parse_kind(params[k]).name == "device" for k in ("local", "remote")),
            "buffers": {"local": region.describe(), "remote": peer.describe()},
        }

        rails = rail_bytes(params, protocols, [int(t.local_descs[:, 1].sum()) for t in transfers])
        devices = rail_devices(params, protocols)
        before = {d: read_counters(d) for d in devices}

        def derive(_m) -> dict[str, Any]:
            extra = {"telemetry": [t.telemetry() for t in transfers]}
            if rails is not None:
                extra["rail_bytes"] = rails
                extra["rail_counters"] = {**counter_deltas(before, {d: read_counters(d) for d in devices}),
                                          "note": COUNTER_NOTE}
            return extra

        workload = Workload(size, run, reset, check)
        if mooncake and transfers:  # transport=both: NIXL on the same buffers, timed interleaved with Mooncake
            workload.pair = Pair(AGAINST_NIXL, Workload(size, run_nixl, reset, check))
        return Prepared(workload, metadata, cleanup.close, derive)


@register
class NetWrite(_Net):
    id = "net.write"
    description = "local memory to a remote NIXL agent over UCX (RDMA write where available)"
    operation = "WRITE"


@register
class NetRead(_Net):
    id = "net.read"
    description = "a remote NIXL agent's memory to local memory over UCX (RDMA read where available)"
    operation = "READ"
