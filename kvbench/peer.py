"""The far side of a network benchmark: a NIXL agent that owns a buffer and answers requests.

Runs in its own process (`python -m kvbench.peer ...`, started by kvbench for `peer=local`,
or by a launcher on another host). Everything between the two sides goes through NIXL:
metadata through its listener, small control messages as NIXL notifications —
`BASE:<address>:<bytes>:<device>` once, then `CRC?` → `CRC:<crc32>`, `POISON` → `POISONED` (the reset),
`BYE` to end. No other socket is opened.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

import numpy as np

from kvbench.backends.nixl import desc_array, make_agent
from kvbench.memory.kinds import allocate
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import fill_pattern

IDLE_LIMIT_S = 900.0  # a peer whose initiator vanished does not linger
PATTERN_SEED = 11  # the bytes the initiator expects to read back


def region_crc(region) -> int:
    data = region.host_array if region.host_array is not None else region.device_array.get()
    return zlib.crc32(memoryview(np.ascontiguousarray(data)))


def wait_for_metadata(agent, remote: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not agent.check_remote_metadata(remote):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no NIXL metadata from agent '{remote}' within {timeout_s:.0f} s")
        time.sleep(0.01)


def serve(name: str, port: int, initiator: str, initiator_addr: str | None, initiator_port: int | None, size: int,
          memory: str, seed: int, timeout_s: float) -> int:
    """Own a buffer and answer the initiator until it says BYE.

    With `initiator_addr` this side reaches out (peer=local) and serves one session. Without
    it, it waits for initiators to push their metadata to this side's listener (peer=remote,
    started by a launcher) and serves one session per benchmark case, until none comes for
    `timeout_s` seconds.
    """
    agent = make_agent(name, ["UCX"], listen_port=port, telemetry=False)
    region = allocate(memory, size)
    _fill(region, seed)
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
            _fill(region, seed)
    finally:
        region.close()


def _fill(region, seed: int) -> None:
    if region.host_array is not None:
        fill_pattern(region.host_array, seed=seed)
    else:
        pattern = np.empty(region.size_bytes, dtype=np.uint8)
        fill_pattern(pattern, seed=seed)
        region.device_array.set(pattern)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvbench.peer", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, required=True, help="this agent's NIXL listener port")
    parser.add_argument("--initiator", required=True, help="the initiator agent's name")
    parser.add_argument("--initiator-addr", default=None,
                        help="reach the initiator here; omit to wait for it to connect (launcher mode)")
    parser.add_argument("--initiator-port", type=int, default=None)
    parser.add_argument("--size", type=int, required=True, help="buffer bytes")
    parser.add_argument("--memory", default="pageable")
    parser.add_argument("--seed", type=int, default=PATTERN_SEED)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the initiator")
    args = parser.parse_args(argv)
    return serve(args.name, args.port, args.initiator, args.initiator_addr, args.initiator_port, args.size,
                 args.memory, args.seed, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
