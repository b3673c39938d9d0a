"""One rank's share of a pattern over N ranks (python -m kvbench.cluster.launch), run into the store as one run.

Every rank serves a target and measures when the schedule (kvbench/cluster/schedule.py) says it is
its turn; the rounds are separated by barriers through rank 0 (kvbench/cluster/rendezvous.py).
Each result records where its bytes went: `src_host` and `dst_host` in its parameters (each
directed pair of hosts is a case of its own) and, in its metadata under `cluster`, the pattern,
the round, both ranks and the round's concurrency. Bytes leave the target in a read (the
initiator pulls them) and leave the initiator in a write.

A rank that died is never waited for: the pairs it should have measured are recorded `failed` by
their other rank, with the reason, and the pairs that needed its target fail when they cannot
reach it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from kvbench.benches.describe import describe_params
from kvbench.benches.registry import get_bench
from kvbench.cluster.rendezvous import Rendezvous, RendezvousLost, target_name
from kvbench.errors import BadInput
from kvbench.hardware.facts import HostFacts
from kvbench.measure.engine import Settings
from kvbench.metadata import CLUSTER
from kvbench.plan.cases import Case
from kvbench.plan.suite import load_suite
from kvbench.run.interrupts import signals_end_runs
from kvbench.run.progress import RunProgress
from kvbench.run.result import Result
from kvbench.run.runner import RunInfo, execute, run_case
from kvbench.run.suite_run import RunOutcome, RunRequest, plan_request
from kvbench.run.this_host import host_facts
from kvbench.store import open_store


@dataclass(frozen=True)
class Slot:
    """One case of this rank's share: measured (`measure`) after barrier `barrier`, or recorded
    failed for an initiator that died before it measured it (checked after the round's end)."""

    barrier: int
    case: Case
    round: int
    initiator: int
    target: int
    measure: bool


def pulls(bench_id: str, params: dict | None = None) -> bool:
    """True when the initiator pulls the bytes from the target (a read: net.read, kv.restore; not a
    kv.restore with mode=push, whose initiator writes into the target)."""
    if (params or {}).get("mode") == "push":
        return False
    return getattr(get_bench(bench_id), "operation", "WRITE") == "READ"


def refused_in_cluster(case: Case) -> str | None:
    """Why a case of the launcher's selection cannot run against another rank's target (None: it can):
    a benchmark that names no direction to a peer (`operation`), or a kv.restore whose pool is not
    on the peer (src=remote)."""
    bench = get_bench(case.bench)
    said = f"{case.bench} {describe_params(case.bench, case.params)}"
    if getattr(bench, "operation", None) is None:
        return f"{said}: does not run against a peer (net.write, net.read and kv.restore src=remote do)"
    if case.params.get("src", "remote") != "remote":  # canonical memory kind: "remote" exactly
        return (f"{said}: its pool is in src={case.params['src']}, not on a peer: give --set src=remote with "
                "--set strategy=nixl (or a two-hop --set via=pageable|pinned)")
    return None


def host_names(roster: list[dict | None]) -> list[str | None]:
    """Each rank's host name as results name it; ranks sharing a host are told apart by local rank. A rank
    that never joined told nobody its host (no launcher names another rank's host): None, never a guess."""
    hosts = [entry.get("host") if entry else None for entry in roster]
    return [f"{h}/{entry['local_rank']}" if h and hosts.count(h) > 1 else h for h, entry in zip(hosts, roster)]


def rank_said(rank: int, hosts: list[str | None]) -> str:
    """`rank 2 (n2)`, or `rank 2 (host unknown: it never joined)` for a rank whose host nobody knows."""
    return f"rank {rank} ({hosts[rank] or 'host unknown: it never joined'})"


# What reaching a target takes; a target that never joined gave neither, and a default would be made up
WHERE = ("peer_addr", "peer_port")


def share(cases: list[Case], rounds: list[list[tuple[int, int]]], rank: int, roster: list[dict | None],
          pattern: str) -> list[Slot]:
    """This rank's slots: its own pairs' cases, and a stand-in for each pair whose initiator dies."""
    hosts = host_names(roster)
    slots = []
    for k, pairs in enumerate(rounds):
        for initiator, target in pairs:
            if rank not in (initiator, target):
                continue
            entry = roster[target]
            for case in cases:
                src, dst = (target, initiator) if pulls(case.bench, case.params) else (initiator, target)
                given = {**case.params, "peer_name": target_name(target),
                         **({"peer_addr": entry["addr"], "peer_port": entry["port"]} if entry else {}),
                         **{k: h for k, h in (("src_host", hosts[src]), ("dst_host", hosts[dst])) if h}}
                # a rank that never joined: its pairs fail unmeasured, stored with what is known (its rank, in
                # the cluster record) and without the host or address nobody knows, not a default's
                unknown = {*(WHERE if entry is None else ()),
                           *(k for k, h in (("src_host", hosts[src]), ("dst_host", hosts[dst])) if not h)}
                params = {k: v for k, v in get_bench(case.bench).canonical_params(given).items() if k not in unknown}
                measure = rank == initiator
                slots.append(Slot(k if measure else k + 1, Case(case.bench, params), k, initiator, target, measure))
    return sorted(slots, key=lambda s: (s.barrier, not s.measure))  # stable: the schedule's order within


def cluster_record(slot: Slot, pattern: str, rounds: list, hosts: list[str | None], cluster: str = "") -> dict:
    """The pair's `cluster` metadata; a host nobody knows (its rank never joined) is None."""
    src, dst = ((slot.target, slot.initiator) if pulls(slot.case.bench, slot.case.params)
                else (slot.initiator, slot.target))
    return {"pattern": pattern, "round": slot.round, "src_host": hosts[src], "dst_host": hosts[dst],
            "src_rank": src, "dst_rank": dst, "concurrency": len(rounds[slot.round]),
            **({"id": cluster} if cluster else {})}


# The run tags that make one launch's N runs one cluster run (kvbench/analyze/runs.py reads them)
CLUSTER_TAG, RANK_TAG, WORLD_TAG = "cluster", "cluster_rank", "cluster_world"


def cluster_tags(cluster: str, rank: int, world: int) -> dict[str, str]:
    """The tags of rank `rank`'s run in cluster run `cluster` of `world` ranks ({} without an id: a rank 0
    of an older kvbench minted none)."""
    return {CLUSTER_TAG: cluster, RANK_TAG: str(rank), WORLD_TAG: str(world)} if cluster else {}


def launcher_overrides(benches: tuple[str, ...], suite: str | None, settings: dict) -> dict:
    """The launcher's own settings that a selected benchmark takes: block_size and batch size net.*'s
    transfers to its target's buffer, and kv.restore (its pool asked for by size) takes neither, so
    `--bench kv.restore` alone is not refused for them."""
    ids = benches
    if not ids and suite:
        ids = tuple(sweep.id for sweep in load_suite(suite)[0].bench)
    return {k: v for k, v in settings.items() if any(k in get_bench(b).params for b in ids)}


def peer_cases(request: RunRequest) -> tuple[list[Case], Settings, RunInfo]:
    """The request's cases that run against a peer (peer=remote), its settings and run info."""
    try:
        cases, settings, info = plan_request(request)
    except BadInput as exc:
        if "--set peer:" not in str(exc):
            raise
        cases = []  # no selected benchmark takes `peer`: said below in the launcher's words
    cases = [c for c in cases if c.params.get("peer") == "remote"]
    for case in cases:
        reason = refused_in_cluster(case)
        if reason:
            raise BadInput(reason)
    if not cases:
        raise BadInput("none of the selected benchmarks runs against a peer (net.write, net.read take peer=remote; "
                       "kv.restore with src=remote)")
    return cases, settings, info


class RankShare:
    """`runner` for `run_and_show`: this rank's share of the pattern, as one run."""

    def __init__(self, rank: int, rendezvous: Rendezvous, roster: list[dict | None], rounds: list, pattern: str,
                 dead: dict[int, int], cluster: str = "") -> None:
        self.rank, self.rendezvous, self.roster, self.rounds, self.pattern = rank, rendezvous, roster, rounds, pattern
        self.cluster = cluster  # the launch's cluster id (rank 0 minted it)
        self.dead = dict(dead)  # rank → the last barrier it reached (-1: never joined)
        self.passed = -1  # the last barrier this rank passed
        self.hosts = host_names(roster)
        self.lost: str | None = None  # rank 0 gone: every later slot fails with this
        self.store = None  # where this rank stores (the others too, when they share a database)
        self.floor = 0  # the newest result id before this share began: later ones are this cluster run's

    def through(self, k: int) -> None:
        """Pass every barrier up to `k`, learning which ranks died."""
        while self.passed < k and self.lost is None:
            try:
                self.dead.update(self.rendezvous.barrier(self.passed + 1))
            except RendezvousLost as exc:
                self.lost = str(exc)
                return
            self.passed += 1
        if self.rank in self.dead:
            self.lost = f"rank 0 gave this rank up (silent for longer than the timeout) before barrier {k}"

    def __call__(self, request: RunRequest, console: Console) -> RunOutcome:
        cases, settings, info = peer_cases(request)
        slots = share(cases, self.rounds, self.rank, self.roster, self.pattern)
        store, facts = open_store(request.db), host_facts()
        self.store, self.floor = store, store.newest_result_id()  # before barrier 0: no pair measured yet
        by_case = {id(s.case): s for s in slots}
        planned = sum(s.measure for s in slots)
        stored = 0
        with signals_end_runs(), RunProgress(console, planned, describe_params) as shown:
            def run_one(_i: int, case: Case) -> Result | None:
                nonlocal stored

                def started(unplanned: bool = False) -> None:
                    if unplanned:  # a dead rank's pair, recorded here: one more than this rank planned
                        shown.grow()
                    shown.start(stored, case)

                result = self._one(by_case[id(case)], case, facts, settings, started)
                stored += result is not None
                return result

            run_id = execute([s.case for s in slots], store, facts, settings, info, on_result=shown.done,
                             run_one=run_one, planned=planned)
        self.through(len(self.rounds))  # the end: every rank has finished its pairs
        failed = sum(r["status"] == "failed" for r in store.results(run_id))
        return RunOutcome(run_id, store, failed)

    def _one(self, slot: Slot, case: Case, facts: HostFacts, settings: Settings,
             started: Callable[..., None]) -> Result | None:
        """The result of one slot, after its barrier; None for a stand-in whose initiator lived."""
        self.through(slot.barrier)
        record = {CLUSTER: cluster_record(slot, self.pattern, self.rounds, self.hosts, self.cluster)}
        base = {"bench": case.bench, "params": case.params, "case_hash": case.case_hash, "status": "failed",
                "metadata": record}
        other = slot.target if slot.measure else slot.initiator
        if self.lost:
            if not slot.measure:
                return None  # its initiator records it, failed for the same reason
            started()
            return Result(**base, reason=f"not measured: {self.lost}")
        if not slot.measure:
            if self.dead.get(other, slot.round + 1) > slot.round or self._initiator_stored(slot):
                return None  # its initiator measured it, or lives to say why not
            started(unplanned=True)
            return Result(**base, reason=f"{rank_said(other, self.hosts)} died before it measured this pair "
                                         f"in round {slot.round}")
        started()
        if other in self.dead:
            return Result(**base, reason=f"{rank_said(other, self.hosts)} is gone: rank 0 lost it before "
                                         f"round {slot.round}")
        result = run_case(case, facts, settings)
        return dataclasses.replace(result, metadata={**result.metadata, **record})

    def _initiator_stored(self, slot: Slot) -> bool:
        """Whether the initiator of `slot` stored its result before it died (it reached the round's
        barrier, measured, stored, and died before the next): a stand-in would record the pair twice,
        `ok` and `failed`. Seen where the ranks share a database (PostgreSQL, one SQLite file); ranks
        that store apart cannot see each other's results."""
        if self.store is None:
            return False
        for row in self.store.case_results_after(slot.case.case_hash, self.floor):
            record = (row["extra"] or {}).get(CLUSTER) or {}
            if record.get("pattern") == self.pattern and record.get("round") == slot.round:
                return True
        return False
