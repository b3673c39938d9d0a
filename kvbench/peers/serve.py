"""The far side of a network benchmark: a NIXL agent that owns a buffer and answers requests.

Everything between the two sides goes through NIXL: metadata through its listener, small control
messages as NIXL notifications — `BASE:<address>:<bytes>:<device>:<mem type>` once, then
`CRC?` → `CRC:<crc32>`, `POISON` → `POISONED` (the reset), `BYE` to end. No other socket is opened.
Started as `python -m kvbench.peer` (kvbench/peer.py) or by `python -m kvbench.launch`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from kvbench.backends.nixl import desc_array, make_agent, unlink_own_ucx_log
from kvbench.errors import BadInput
from kvbench.memory.kinds import allocate
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.peers.protocol import fill_region, region_crc, wait_for_metadata

IDLE_LIMIT_S = 900.0  # a peer whose initiator vanished does not linger


def serve(name: str, port: int, initiator: str, initiator_addr: str | None, initiator_port: int | None, size: int,
          memory: str, seed: int, timeout_s: float) -> int:
    """Own a buffer and answer the initiator until it says BYE.

    With `initiator_addr` this side reaches out (peer=local) and serves one session. Without
    it, it waits for initiators to push their metadata to this side's listener (peer=remote,
    started by a launcher) and serves one session per benchmark case, until none comes for
    `timeout_s` seconds.
    """
    region = allocate(memory, size)  # a bad memory kind is refused before a port is taken
    try:
        agent = make_agent(name, ["UCX"], listen_port=port, telemetry=False)
    except RuntimeError as exc:
        region.close()
        if "bind" in str(exc).lower():
            raise BadInput(f"port {port} is taken on this host (NIXL could not listen on it): give another --port") \
                from None
        raise
    unlink_own_ucx_log()  # UCX opened it with the agent; this side never reads it, and a kill leaves nothing
    fill_region(region, seed)
    mem_type, base, device = nixl_memory(region)
    agent.register_memory(desc_array(np.array([base]), np.array([size]), device), mem_type)
    passive = not initiator_addr
    if not passive:
        agent.fetch_remote_metadata(initiator, initiator_addr, initiator_port)
        agent.send_local_metadata(initiator_addr, initiator_port)
    try:
        while True:
            try:
                wait_for_metadata(agent, initiator, timeout_s)
            except TimeoutError:
                if passive:
                    return 0  # no further case came: the run is over
                raise
            agent.send_notif(initiator, f"BASE:{base}:{size}:{device}:{mem_type}".encode())
            status = _session(agent, initiator, region)
            if status != 0 or not passive:
                return status
            try:
                agent.remove_remote_agent(initiator)  # the next case brings a new agent of the same name
            except Exception:
                pass  # already gone when its side closed first
            fill_region(region, seed)
    finally:
        region.close()


def _session(agent, initiator: str, region) -> int:
    """Answer one initiator until BYE (0), or give up when it vanished (3)."""
    parent = os.getppid()
    idle_since = time.monotonic()
    while True:
        messages = agent.get_new_notifs().get(initiator, [])
        for message in messages:
            if message == b"CRC?":
                agent.send_notif(initiator, f"CRC:{region_crc(region)}".encode())
            elif message == b"POISON":
                region.poison()  # returns when a GPU buffer's fill has finished, before the next write lands
                agent.send_notif(initiator, b"POISONED")
            elif message == b"BYE":
                return 0
        if messages:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > IDLE_LIMIT_S or (parent != 1 and os.getppid() != parent):
            return 3
        time.sleep(0.001)
