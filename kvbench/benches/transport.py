"""Which data plane a network benchmark moves its bytes with — NIXL (UCX), Mooncake's Transfer
Engine, or both side by side — declared once for net.write, net.read and the remote KV restore,
and the Mooncake side of such a case: an engine on this side, the peer's buffer served by one on
the far side, one prepared batch.

Everything else is the same for both transports: the buffers, their patterns, the poison, the byte
checks before and after timing, the peer and its control messages (NIXL notifications), the
timeout. `transport=both` times Mooncake (the case) and NIXL (its pair) interleaved, A B / B A, and
stores the ratio Mooncake / NIXL per pair of samples (metadata `paired`).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from kvbench.backends.mooncake import (
    Engine,
    MooncakeTransfer,
    batch_limit,
    check_metadata,
    local_address_towards,
    mooncake_unavailable_reason,
    mooncake_version,
)
from kvbench.backends.nixl import find_library
from kvbench.benches.declared import TRANSPORT
from kvbench.errors import BadInput
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.peers.mooncake_target import ask

AGAINST_NIXL = {"transport": "nixl"}  # the pair of transport=both


def cuda_runtime_folder() -> str | None:
    """The folder of the CUDA runtime Mooncake's wheel links (pip's nvidia package), for a tool of the
    wheel started as its own process (crosscheck); None where it is not installed."""
    import os

    found = find_library("libcudart.so.12")
    return os.path.dirname(found) if found else None


def uses_mooncake(params: dict[str, Any]) -> bool:
    return params.get("transport", "nixl") in ("mooncake", "both")


def uses_nixl_data(params: dict[str, Any]) -> bool:
    return params.get("transport", "nixl") in ("nixl", "both")


def transport_unavailable_reason(params: dict[str, Any]) -> str | None:
    """Why this case's transport cannot run here (None: it can)."""
    if not uses_mooncake(params):
        return None
    reason = mooncake_unavailable_reason()
    return f"transport={params['transport']}: {reason}" if reason else None


def validate_transport(params: dict[str, Any]) -> None:
    if not uses_mooncake(params):
        for name in ("mooncake_metadata", "mooncake_protocol", "mooncake_device"):
            if params.get(name) != TRANSPORT[name].parse(name, TRANSPORT[name].default):
                raise BadInput(f"{name}={params[name]} needs transport=mooncake or transport=both")
        return
    check_metadata(params["mooncake_metadata"])
    if params["mooncake_device"] and params["mooncake_protocol"] != "rdma":
        raise BadInput(f"mooncake_device={params['mooncake_device']} names a NIC: it needs mooncake_protocol=rdma")


def mooncake_batch(params: dict[str, Any], operation: str, region, peer, offsets: list[int], lengths: list[int],
                   stack: ExitStack, remote_offsets: list[int] | None = None,
                   rows: int | None = None) -> tuple[MooncakeRun, dict[str, Any]]:
    """(the pieces `offsets`/`lengths` of `region` to or from `remote_offsets` (default: the same
    offsets) of `peer`'s buffer over Mooncake, in batches of at most `rows` pieces (and at most what
    the protocol admits in one: `batch_limit`) submitted one after the other; what the result records
    of it). The engines close with `stack`."""
    address = getattr(peer, "address", ("127.0.0.1", 0))[0]
    engine = Engine(local_address_towards(address), params["mooncake_metadata"], params["mooncake_protocol"],
                    params["mooncake_device"], params["timeout_s"])
    stack.callback(engine.close)
    segment = peer.mooncake_segment(ask(address, params["mooncake_metadata"], params["mooncake_protocol"],
                                        params["mooncake_device"], params["timeout_s"]))
    _, base, _ = nixl_memory(region)
    engine.register(base, region.size_bytes)
    remote_offsets = offsets if remote_offsets is None else remote_offsets
    step = min(rows or max(len(offsets), 1), batch_limit(params["mooncake_protocol"]) or len(offsets) or 1)
    batches = [MooncakeTransfer(engine, operation, segment, [base + o for o in offsets[i:i + step]],
                                [peer.base + o for o in remote_offsets[i:i + step]], lengths[i:i + step],
                                params["timeout_s"]) for i in range(0, len(offsets), step)]
    return MooncakeRun(batches), {"version": mooncake_version(), **engine.describe(), "peer_segment": segment,
                                  "batches": len(batches), "batch_rows": step}


class MooncakeRun:
    """Every batch of one operation, submitted one after the other; calling it runs them all."""

    def __init__(self, batches: list[MooncakeTransfer]) -> None:
        self.batches = batches

    def __call__(self) -> None:
        for batch in self.batches:
            batch.run()

    run = __call__
