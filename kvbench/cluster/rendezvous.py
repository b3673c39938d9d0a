"""A rank's side of the rendezvous with rank 0 (kvbench/cluster/coordinator.py): join and learn the
roster, wait at the barriers between rounds, and beat a heart so rank 0 knows this rank lives.

One thread owns this side's NIXL agent (NIXL agents are not shared between threads): it sends
what the main thread queues, a heartbeat about once a second whatever the main thread does (a
long case, a peer that is slow to answer), and hands rank 0's answers back. Every wait is
bounded: rank 0 silent for `timeout_s` raises `RendezvousLost`; rank 0 refusing this rank (started
twice, or with another world size) raises `BadInput`.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable

from kvbench.errors import BadInput
from kvbench.peers.protocol import fetch_metadata, on_free_port

COORDINATOR = "kvbench-target-r0"  # rank 0's target agent, which holds the rendezvous
HEARTBEAT_S = 1.0
CLOSE_S = 60.0  # the longest close() waits for the thread (it may be building its agent); bounds a hang only


class RendezvousLost(RuntimeError):
    """Rank 0 could not be reached, or went silent."""


def target_name(rank: int) -> str:
    """The NIXL agent name of rank `rank`'s target."""
    return f"kvbench-target-r{rank}"


class Rendezvous:
    def __init__(self, entry: dict, address: str, port: int, timeout_s: float) -> None:
        self.entry, self.address, self.port, self.timeout_s = entry, address, port, timeout_s
        self.name = f"kvbench-rank{entry['rank']}-{os.getpid()}"
        self._outbox: queue.Queue[bytes] = queue.Queue()
        self._cond = threading.Condition()
        self._roster: dict | None = None
        self._go: dict[int, dict[int, int]] = {}
        self._error: str | None = None
        self._refused: str | None = None  # rank 0's REFUSED:<why>
        self._heard = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kvbench-rendezvous", daemon=True)
        self._thread.start()

    # the main thread's side
    def join(self, alive: Callable[[], bool] = lambda: True) -> dict:
        """The roster: {"ranks": [entry or None per rank], "dead": [ranks]}."""
        return self._wait(lambda: self._roster, "the roster", alive)

    def barrier(self, k: int) -> dict[int, int]:
        """Wait at barrier `k` until rank 0 releases it; the ranks it holds dead, each with the last
        barrier it reached."""
        self._outbox.put(f"BAR:{k}".encode())
        return self._wait(lambda: self._go.get(k), f"barrier {k}")

    def leave(self) -> None:
        self._outbox.put(b"DONE")
        deadline = time.monotonic() + 5
        while not self._outbox.empty() and time.monotonic() < deadline:
            time.sleep(0.05)  # the thread sends it
        self.close()

    def close(self) -> None:
        """Stop the thread and wait for it (at most CLOSE_S seconds); a signal meanwhile is raised
        after. The process must not exit while the thread is inside NIXL (building its agent, asking
        for metadata): Python 3.11 ends a daemon thread that wakes during finalization with
        pthread_exit, and its unwinding through NIXL's C++ frames aborts the process ("terminate
        called without an active exception", status 134 instead of the signal's 128 + N)."""
        from kvbench.run.interrupts import signals_deferred

        self._stop.set()
        with signals_deferred():
            self._thread.join(CLOSE_S)

    def _wait(self, ready, what: str, alive: Callable[[], bool] = lambda: True):
        with self._cond:
            while True:
                value = ready()
                if value is not None:
                    return value
                if self._refused:
                    raise BadInput(f"rank 0 refused this rank: {self._refused}")
                if self._error:
                    raise RendezvousLost(self._error)
                if not alive():
                    raise RendezvousLost(f"stopped waiting for {what}")
                if time.monotonic() - self._heard > self.timeout_s:
                    raise RendezvousLost(f"rank 0 at {self.address}:{self.port} went silent for "
                                         f"{self.timeout_s:.0f} s while this rank waited for {what}")
                self._cond.wait(0.2)

    # the thread's side
    def _loop(self) -> None:
        from kvbench.backends.nixl import make_agent
        from kvbench.backends.ucx_protocols import hold_log

        try:
            # NIXL answers a metadata fetch only to an agent that listens itself
            agent, _ = on_free_port(lambda port: make_agent(self.name, ["UCX"], listen_port=port, telemetry=False))
            hold_log()  # UCX has opened this process's log: its name goes, so a killed rank leaves none
            self._connect(agent)
            join = ("JOIN:" + json.dumps(self.entry)).encode()
            beat = sent_join = 0.0
            while not self._stop.is_set():
                now = time.monotonic()
                if self._roster is None and now - sent_join > 2.0:
                    agent.send_notif(COORDINATOR, join)  # again until answered: a join before rank 0 had
                    sent_join = now  # this side's metadata may go unanswered
                if now - beat > HEARTBEAT_S:
                    agent.send_notif(COORDINATOR, b"ALIVE")
                    beat = now
                while not self._outbox.empty():
                    agent.send_notif(COORDINATOR, self._outbox.get())
                for message in agent.get_new_notifs().get(COORDINATOR, []):
                    self._take(message.decode(errors="replace"))
                time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001 - the main thread reports it in one line
            with self._cond:
                self._error = f"rendezvous with rank 0 at {self.address}:{self.port} failed: {exc}"
                self._cond.notify_all()

    def _connect(self, agent) -> None:
        """Rank 0's metadata in, this side's out; rank 0 may still be starting (launchers start
        ranks together), so ask again until it answers, within the timeout."""
        if not fetch_metadata(agent, COORDINATOR, self.address, self.port, time.monotonic() + self.timeout_s,
                              give_up=self._stop.is_set):
            raise RendezvousLost(f"rank 0 at {self.address}:{self.port} did not answer within "
                                 f"{self.timeout_s:.0f} s")
        agent.send_local_metadata(self.address, self.port)
        with self._cond:
            self._heard = time.monotonic()

    def _take(self, text: str) -> None:
        with self._cond:
            self._heard = time.monotonic()
            if text.startswith("ROSTER:"):
                self._roster = json.loads(text[7:])
            elif text.startswith("REFUSED:"):
                self._refused = text[8:]
            elif text.startswith("GO:"):
                k, dead = text[3:].split(":", 1)
                self._go[int(k)] = {int(r): v for r, v in json.loads(dead).items()}
            self._cond.notify_all()
