"""The far side of a network benchmark: a NIXL agent that owns a buffer and answers requests.

Everything between the two sides goes through NIXL: metadata through its listener, small control
messages as NIXL notifications — `OPEN` from an initiator started elsewhere (peer=remote), or
`OPEN:<bytes>` for a buffer of that size (a KV pool, kv.restore src=remote), then
`BASE:<address>:<bytes>:<device>:<mem type>` once (or `REFUSED:<reason>` when that size cannot be
allocated here, and the session ends there), then
`CRC?` → `CRC:<crc32>`, `POISON` → `POISONED` (the reset), `MOONCAKE?…` → `MOONCAKE:<segment>` (the
same buffer served over Mooncake's Transfer Engine too, kvbench/peers/mooncake_target.py), `BYE` to end.
No other socket is opened (but the Transfer Engine's own, once an initiator asks for it).
Started as `python -m kvbench.cluster.peer` (kvbench/cluster/peer.py) or by `python -m kvbench.cluster.launch`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from kvbench.backends.nixl import desc_array, make_agent, unlink_own_ucx_log
from kvbench.cluster.coordinator import Coordinator
from kvbench.cluster.parent import parent_gone
from kvbench.errors import BadInput, one_line
from kvbench.memory.kinds import allocate
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.peers.mooncake_target import ASK as MOONCAKE_ASK
from kvbench.peers.mooncake_target import MooncakeTargets
from kvbench.peers.protocol import fill_region, region_crc, wait_for_metadata

IDLE_LIMIT_S = 900.0  # a peer whose initiator vanished does not linger
# the Transfer Engines this serving process starts when an initiator asks for transport=mooncake
MOONCAKE = MooncakeTargets()


def serve(name: str, port: int, initiator: str | None, initiator_addr: str | None, initiator_port: int | None,
          size: int, memory: str, seed: int, timeout_s: float, world: int = 0, stay: bool = False,
          parent: int | None = None, launch: str = "") -> int:
    """Own a buffer and answer the initiator until it says BYE.

    With `initiator_addr` this side reaches out (peer=local) and serves `initiator` one session.
    Without it, it waits for initiators (any name) to push their metadata to this side's listener
    and say OPEN (peer=remote, started by a launcher), each with a buffer of its own, several at
    once (an incast); it ends when none has spoken for `timeout_s` seconds, or, with `stay`, only
    when stopped (a rank of a cluster stops its own target once every rank is done with it). With
    `world` it also holds the rendezvous of that many ranks (kvbench/cluster/coordinator.py) and ends
    when every rank has left or is dead. `parent`: the pid of the process that started this one (else
    the parent it has now): this side ends (3) once that process is gone.
    """
    parent = parent or os.getppid()
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
    if initiator_addr is None:
        return _serve_many(agent, region, memory, seed, timeout_s, world, stay, parent, launch)
    mem_type, base, device = nixl_memory(region)
    agent.register_memory(desc_array(np.array([base]), np.array([size]), device), mem_type)
    try:
        agent.fetch_remote_metadata(initiator, initiator_addr, initiator_port)
        agent.send_local_metadata(initiator_addr, initiator_port)
        wait_for_metadata(agent, initiator, timeout_s)
        agent.send_notif(initiator, f"BASE:{base}:{size}:{device}:{mem_type}".encode())
        return _session(agent, initiator, region, parent)
    finally:
        MOONCAKE.close()
        region.close()


def _session(agent, initiator: str, region, parent: int) -> int:
    """Answer one initiator until BYE (0), or give up when it or this side's parent vanished (3)."""
    idle_since = time.monotonic()
    while True:
        messages = agent.get_new_notifs().get(initiator, [])
        for message in messages:
            if _answer(agent, initiator, region, message):
                return 0
        if messages:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > IDLE_LIMIT_S or parent_gone(parent):
            return 3
        time.sleep(0.001)


def _serve_many(agent, first, memory: str, seed: int, timeout_s: float, world: int, stay: bool, parent: int,
                launch: str = "") -> int:
    """Serve initiators as they come, each its own buffer (the spare ones reused), and, with
    `world`, the rendezvous of that many ranks. 0 when done; 3 when this side's parent died."""
    size = first.size_bytes
    spare, sessions, waiting = [first], {}, {}  # sessions: initiator → (region, registration, last heard)
    coordinator = Coordinator(world, timeout_s, time.monotonic(), launch) if world else None
    pending: list[tuple[str, bytes, float]] = []  # rendezvous answers waiting for the rank's metadata
    heard = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            for sender, messages in agent.get_new_notifs().items():
                heard = now
                for message in messages:
                    if sender in sessions:
                        region, reg, _ = sessions[sender]
                        sessions[sender] = (region, reg, now)
                        try:
                            ended = _answer(agent, sender, region, message)
                        except Exception:  # noqa: BLE001 - its initiator died (NIXL_ERR_REMOTE_DISCONNECT): it
                            ended = True  # alone is lost; this side serves the others on
                        if ended:
                            _close(agent, sender, sessions.pop(sender), spare, size, seed)
                    elif message == b"OPEN" or message.startswith(b"OPEN:"):
                        waiting.setdefault(sender, (now, message[5:]))
                    elif coordinator is not None:
                        pending += [(to, text, now) for to, text in coordinator.on_message(sender, message, now)]
            for sender, (since, asked) in list(waiting.items()):
                if agent.check_remote_metadata(sender):  # its OPEN may overtake its metadata
                    del waiting[sender]
                    sessions[sender] = (*_open(agent, sender, spare, memory, size, asked, seed), now)
                elif now - since > timeout_s:
                    del waiting[sender]
            for sender, (_, _, last) in list(sessions.items()):
                if now - last > IDLE_LIMIT_S:  # its initiator vanished without a BYE
                    _close(agent, sender, sessions.pop(sender), spare, size, seed)
            if coordinator is not None:
                pending += [(to, text, now) for to, text in coordinator.tick(now)]
                pending = _send_ready(agent, pending, now, timeout_s)
                if coordinator.finished():
                    return 0
            elif not stay and not sessions and not waiting and now - heard > timeout_s:
                return 0  # no further case came: the run is over
            if parent_gone(parent):
                return 3
            time.sleep(0.001)
    finally:
        MOONCAKE.close()
        for region, *_ in sessions.values():
            if region is not None:
                region.close()
        for region in spare:
            region.close()


def _open(agent, initiator: str, spare: list, memory: str, size: int, asked: bytes, seed: int) -> tuple:
    """A buffer for `initiator`, registered, its BASE sent: (region, registration). `asked`: the
    bytes its `OPEN:<bytes>` asked for (b"": this side's own `size`, a spare one reused). (None,
    None) when the asked size cannot be had here: `REFUSED:<reason>` sent instead, and the session
    holds nothing until its BYE (forgetting the initiator at once could drop the message unsent)."""
    try:
        if asked:
            size = _asked_size(asked)
        region = spare.pop() if spare and size == spare[-1].size_bytes else None
        if region is None:
            region = allocate(memory, size)  # a host buffer beyond 90 % of the free memory is refused here
            try:
                fill_region(region, seed)
            except BaseException:
                region.close()
                raise
    except Exception as exc:  # this initiator's case fails with the reason; this side serves on
        try:
            agent.send_notif(initiator, f"REFUSED:{one_line(f'{type(exc).__name__}: {exc}')}".encode())
        except Exception:  # noqa: BLE001 - it died meanwhile: nothing is held for it
            pass
        return None, None
    mem_type, base, device = nixl_memory(region)
    reg = agent.register_memory(desc_array(np.array([base]), np.array([size]), device), mem_type)
    try:
        agent.send_notif(initiator, f"BASE:{base}:{size}:{device}:{mem_type}".encode())
    except Exception:  # noqa: BLE001 - its initiator died after its OPEN: its buffer goes back, this side serves on
        agent.deregister_memory(reg)
        region.close()
        return None, None
    return region, reg


def _asked_size(asked: bytes) -> int:
    """The bytes of an `OPEN:<bytes>`."""
    text = asked.decode(errors="replace")
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"bad OPEN:{text}: expected a buffer size in bytes, at least 1")
    return int(text)


def _forget(agent, initiator: str) -> None:
    try:
        agent.remove_remote_agent(initiator)  # the next case brings a new agent, maybe of the same name
    except Exception:
        pass  # already gone when its side closed first


def _close(agent, initiator: str, session: tuple, spare: list, size: int, seed: int) -> None:
    """End a session: its buffer refilled and kept for the next initiator when it has this side's
    own `size`, freed when an OPEN:<bytes> asked for another (a pool is not held between cases)."""
    region, reg, _ = session
    if region is None:  # refused: nothing was held
        _forget(agent, initiator)
        return
    try:
        agent.deregister_memory(reg)
    except Exception:  # noqa: BLE001 - the buffer is freed below whatever NIXL says
        MOONCAKE.forget(region)
        region.close()
        _forget(agent, initiator)
        return
    _forget(agent, initiator)
    if region.size_bytes != size:
        MOONCAKE.forget(region)
        region.close()
        return
    fill_region(region, seed)
    spare.append(region)


def _send_ready(agent, pending: list, now: float, timeout_s: float) -> list:
    """Send the rendezvous answers whose rank's metadata has come; keep the rest a while."""
    left = []
    for to, text, since in pending:
        if agent.check_remote_metadata(to):
            try:
                agent.send_notif(to, text)
            except Exception:  # noqa: BLE001 - a rank killed after its JOIN (NIXL_ERR_REMOTE_DISCONNECT): the
                pass  # rendezvous holds it dead once it stays silent; it must not end rank 0's target for all
        elif now - since <= timeout_s:
            left.append((to, text, since))
    return left


def _answer(agent, initiator: str, region, message: bytes) -> bool:
    """Answer one message of a session; True when it ended the session (BYE)."""
    if region is None:  # a refused session waits for its BYE
        return message == b"BYE"
    if message == b"CRC?":
        agent.send_notif(initiator, f"CRC:{region_crc(region)}".encode())
    elif message == b"POISON":
        region.poison()  # returns when a GPU buffer's fill has finished, before the next write lands
        agent.send_notif(initiator, b"POISONED")
    elif message.startswith(MOONCAKE_ASK):
        agent.send_notif(initiator, MOONCAKE.answer(region, message))
    return message == b"BYE"
