"""Rank 0's rendezvous for N ranks: who is where (the roster) and the barriers between rounds.

It lives in rank 0's target (kvbench/cluster/serve.py), so it answers on the port that target's NIXL
listener already holds: no other service. Messages are NIXL notifications, text:

    rank → rank 0   JOIN:{"rank": r, "addr": …, "port": …, "host": …, "local_rank": …, "world": N,
                          "launch": the launcher's job id, "" when it gives none}
                    BAR:<k>        arrived at barrier k (round k starts after it; the last is the end)
                    ALIVE          a heartbeat, about once a second, from the rank's rendezvous thread
                    DONE           the rank passed the last barrier and is leaving
    rank 0 → rank   OK             the answer to ALIVE: rank 0 lives
                    REFUSED:<why>  a JOIN from a rank already held by another process, from a rank
                                   started with another world size or by another launch (job id) than
                                   rank 0's, or after the roster went out (it ends, exit 2)
                    ROSTER:{"ranks": [its JOIN's entry, null for a rank that never joined, …],
                            "dead": [r, …], "cluster": id}
                    GO:<k>:{dead rank: the last barrier it reached}

A rank silent for `timeout_s` is dead: barriers stop waiting for it, and every later GO names it,
so the others record its pairs as failed instead of hanging. Pure logic, no NIXL: `serve` feeds it
messages and the clock and sends what it returns.

The cluster id is minted here, once per launch, and handed to every rank in the roster: each rank
stores its share as a run tagged `cluster=<id>`, so the launch reads back as one cluster run
(`cluster:<id>`) whatever database each rank wrote to.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime

Outgoing = list[tuple[str, bytes]]  # (agent name, message)


def mint_cluster_id() -> str:
    """A new cluster id: when it was minted (UTC, to the second, so ids sort by age) and 24 random bits,
    so two launches in one second, or on two clusters writing one database, never share one."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


class Coordinator:
    def __init__(self, world: int, timeout_s: float, now: float, launch: str = "",
                 cluster_id: str | None = None) -> None:
        self.world, self.timeout_s, self.started = world, timeout_s, now
        self.launch = launch  # rank 0's launcher job id ("" when its launcher gives none)
        self.cluster_id = cluster_id or mint_cluster_id()
        self.agents: dict[int, str] = {}  # rank → its rendezvous agent's name
        self.entries: dict[int, dict] = {}
        self.last_seen: dict[int, float] = {}
        self.dead: set[int] = set()
        self.roster_sent = False
        self.arrived: dict[int, set[int]] = {}  # barrier → ranks waiting at it
        self.released: set[int] = set()
        self.done: set[int] = set()
        self.reached: dict[int, int] = {}  # rank → the last barrier it arrived at

    def _rank_of(self, agent: str) -> int | None:
        return next((r for r, name in self.agents.items() if name == agent), None)

    def on_message(self, agent: str, message: bytes, now: float) -> Outgoing:
        """What to send after `agent` said `message`; an unknown message is ignored."""
        text = message.decode(errors="replace")
        if text.startswith("JOIN:"):
            entry = json.loads(text[5:])
            rank = int(entry["rank"])
            refused = self._refusal(agent, entry, rank)
            if refused:
                return [(agent, f"REFUSED:{refused}".encode())]
            self.agents[rank], self.entries[rank], self.last_seen[rank] = agent, entry, now
            if self.roster_sent:  # a repeated join (its answer was lost): the roster again
                return [(agent, self._roster())]
            return self.tick(now)
        rank = self._rank_of(agent)
        if rank is None:
            return []
        self.last_seen[rank] = now
        if text.startswith("BAR:"):
            k = int(text[4:])
            if k in self.released or rank in self.dead:
                return [(agent, self._go(k))]
            self.arrived.setdefault(k, set()).add(rank)
            self.reached[rank] = max(k, self.reached.get(rank, -1))
            return self.tick(now)
        if text == "DONE":
            self.done.add(rank)
        elif text == "ALIVE":
            return [(agent, b"OK")]  # so a rank waiting at a barrier knows rank 0 still lives
        return []

    def _refusal(self, agent: str, entry: dict, rank: int) -> str | None:
        """Why a JOIN cannot be taken (None: it can): a world size other than rank 0's (the schedules would
        differ), or a rank another process already holds (a launcher that started it twice)."""
        world = int(entry.get("world", self.world))
        if world != self.world or not 0 <= rank < self.world:
            return (f"rank 0 runs a world of {self.world} ranks; this rank ({rank}) was started with a world of "
                    f"{world}: start every rank with the same world size")
        launch = str(entry.get("launch") or "")
        if launch and self.launch and launch != self.launch:
            return (f"rank 0 belongs to launch {self.launch} (cluster run {self.cluster_id}); this rank ({rank}) to "
                    f"launch {launch}: a rank joins only the launch that started it")
        if self.agents.get(rank, agent) != agent:
            return (f"rank {rank} is already taken by a process on {self.entries[rank].get('host', '?')}: "
                    "start each rank once")
        if self.roster_sent and rank not in self.agents:
            return (f"cluster run {self.cluster_id} began without rank {rank} (it had not joined within "
                    f"{self.timeout_s:g} s, or it is not of this launch): start every rank of a launch together")
        return None

    def tick(self, now: float) -> Outgoing:
        """Ranks silent too long become dead; the roster and barriers that no longer wait go out."""
        out: Outgoing = []
        if not self.roster_sent:
            if len(self.entries) < self.world and now - self.started <= self.timeout_s:
                return out
            self.dead |= set(range(self.world)) - set(self.entries)
            self.roster_sent = True
            out += [(self.agents[r], self._roster()) for r in sorted(self.agents)]
        for rank, seen in self.last_seen.items():
            if rank not in self.done and now - seen > self.timeout_s:
                self.dead.add(rank)
        alive = set(range(self.world)) - self.dead
        for k in sorted(self.arrived):
            if k not in self.released and alive <= self.arrived[k] | self.done:
                self.released.add(k)
                out += [(self.agents[r], self._go(k)) for r in sorted(self.arrived[k] - self.dead)]
        return out

    def finished(self) -> bool:
        """Every rank has left or is dead: rank 0's target may end."""
        return self.roster_sent and set(range(self.world)) <= self.done | self.dead

    def _roster(self) -> bytes:
        # a dead rank that joined keeps its entry: its pairs are stored with where it was, not a made-up address
        ranks = [self.entries.get(r) for r in range(self.world)]
        return ("ROSTER:" + json.dumps({"ranks": ranks, "dead": sorted(self.dead), "cluster": self.cluster_id})).encode()

    def _go(self, k: int) -> bytes:
        """Barrier k is passed; each dead rank with the last barrier it reached (-1: none), so the
        others know which of its rounds it finished (it reached k + 1 only after round k)."""
        return f"GO:{k}:{json.dumps({r: self.reached.get(r, -1) for r in sorted(self.dead)})}".encode()
