"""Reading and writing results. Each finished result is committed at once, with its samples, so an
interrupted run keeps everything it measured; host and context rows are written once however many
processes race to write them; a write survives a lost connection, and a deleted database file is
found before it (store/durable.py)."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import schema
from kvbench.store.durable import FileIdentity, reading, results_committed, retrying, run_committed
from kvbench.store.hostmerge import HostMerge
from kvbench.store.fleet_spread import FleetSpread
from kvbench.store.links import Links
from kvbench.store.replays import Replays
from kvbench.store.run_facts import RunFacts
from kvbench.store.tags import WHOLE, Tags, is_remeasurement


def _now() -> datetime:
    return datetime.now(UTC)


class Store(Tags, HostMerge, Links, RunFacts, FleetSpread, Replays):
    def __init__(self, engine: sa.Engine, shown_url: str, read_only: bool = False) -> None:
        self.engine = engine
        self.url = shown_url  # redacted: no password
        self.read_only = read_only
        self.file: FileIdentity | None = None  # an SQLite store's file, once open_store has made it
        self.lost_since: float | None = None  # when its connection was lost, while it stays lost (monotonic s)

    def check_file(self) -> None:
        """`Unwritable` when this store's SQLite file was deleted or replaced since it was opened."""
        if self.file is not None:
            self.file.check(self.url)

    def _insert_once(self, conn: sa.Connection, table: sa.Table, values: dict[str, Any]) -> None:
        """INSERT, or nothing when another process inserted the same key first."""
        name = self.engine.dialect.name
        if name in ("postgresql", "sqlite"):  # the dialect in use only: the other's import is 0.1 s of start-up
            dialect = importlib.import_module(f"sqlalchemy.dialects.{name}")
            conn.execute(dialect.insert(table).values(**values).on_conflict_do_nothing())
            return
        key = [c for c in table.primary_key.columns][0]
        if conn.execute(sa.select(key).where(key == values[key.name])).first() is None:
            conn.execute(table.insert().values(**values))

    # --- writing -----------------------------------------------------------------------

    @retrying
    def ensure_host(self, host_id: str, hostname: str, facts: dict) -> None:
        with self.engine.begin() as conn:
            self._insert_once(conn, schema.host, {"id": host_id, "hostname": hostname, "facts": facts,
                                                  "first_seen": _now()})

    @retrying
    def ensure_context(self, context_id: str, facts: dict) -> None:
        with self.engine.begin() as conn:
            self._insert_once(conn, schema.context, {"id": context_id, "facts": facts})

    def begin_run(self, *, host_id: str, context_id: str, suite: str | None, suite_hash: str | None,
                  kvbench_version: str, git_sha: str | None, git_dirty: bool | None, tags: dict,
                  system_state: dict, cases_planned: int | None = None, owner: dict | None = None,
                  facts: dict | None = None) -> int:
        """A new run, `running`, with `facts`: the host's inventory as it is now (HostFacts.to_dict()),
        kept with the run so that it is judged on them (its host's row keeps the first-seen ones). `owner` ({pid, boot_id, machine}) lets a later kvbench tell a crashed
        run from a live one. One run even when the connection is lost at COMMIT and the write is made
        again: the retry looks for the run the first attempt may have committed (same host, owner and
        start, to the microsecond) before it inserts."""
        owner = owner or {}
        started = _now()
        values = dict(host_id=host_id, context_id=context_id, started_at=started, status="running", suite=suite,
                      suite_hash=suite_hash, kvbench_version=kvbench_version, git_sha=git_sha, git_dirty=git_dirty,
                      tags=tags, tags_at={key: started.isoformat() for key in tags}, system_state=system_state,
                      cases_planned=cases_planned, heartbeat_at=started,
                      pid=owner.get("pid"), boot_id=owner.get("boot_id"), machine=owner.get("machine"),
                      facts=facts, facts_source=schema.FACTS_OF_RUN if facts is not None else None)
        return self._begin_run(values, {})

    @retrying
    def _begin_run(self, values: dict[str, Any], seen: dict[str, int]) -> int:
        with self.engine.begin() as conn:
            mine = run_committed(conn, values, seen)
            return mine if mine is not None else int(conn.execute(schema.run.insert().values(**values))
                                                         .inserted_primary_key[0])

    @retrying
    def finish_run(self, run_id: int, status: str, reason: str | None = None, end_state: dict | None = None) -> None:
        """Close the run; `end_state` is kept beside the start state as system_state["at_end"]."""
        with self.engine.begin() as conn:
            values: dict[str, Any] = {"status": status, "reason": reason, "ended_at": _now()}
            if end_state is not None:
                state = conn.execute(sa.select(schema.run.c.system_state).where(schema.run.c.id == run_id)).scalar_one()
                values["system_state"] = {**(state or {}), "at_end": end_state}
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(**values))

    def add_result(self, run_id: int, row: dict, samples_s: list[float]) -> int:
        """Insert one result row and all of its samples in one transaction (and beat the run's heart):
        the runner commits each case as it is measured, so an interrupted run keeps it."""
        return self.add_results(run_id, [(row, samples_s)])[0]

    def add_results(self, run_id: int, items: list[tuple[dict, list[float]]]) -> list[int]:
        """Insert many results with their samples in one transaction (an import, a fleet's bulk
        writer): two statements, however many results. Written once even when the connection is lost
        at COMMIT and the write is made again (the server may have committed the first attempt)."""
        return self._add_results(run_id, items, {})

    @retrying
    def _add_results(self, run_id: int, items: list[tuple[dict, list[float]]], seen: dict[str, int]) -> list[int]:
        with self.engine.begin() as conn:
            # the heartbeat first: it locks the run's row, so its host is read as a merge left it (results follow),
            # and no other writer of the run comes between the check for a committed attempt and the insert
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(heartbeat_at=_now()))
            host_id = conn.execute(sa.select(schema.run.c.host_id).where(schema.run.c.id == run_id)).scalar_one()
            committed = results_committed(conn, run_id, len(items), seen)
            if committed is not None:
                return committed
            rows = [{**row, "run_id": run_id, "host_id": host_id} for row, _samples in items]
            # one INSERT ... RETURNING for every row, ids in the rows' order (SQLAlchemy's insertmanyvalues)
            inserted = conn.execute(schema.result.insert().returning(schema.result.c.id, sort_by_parameter_order=True),
                                    rows)
            ids = [int(r.id) for r in inserted]
            samples = [{"result_id": rid, "idx": i, "seconds": s}
                       for rid, (_row, values) in zip(ids, items, strict=True) for i, s in enumerate(values)]
            if samples:
                conn.execute(schema.sample.insert(), samples)
            return ids

    def beat(self, run_id: int) -> None:
        """Say run `run_id` is alive (its heartbeat, while a long case runs: kvbench/run/lifecycle.py)."""
        self.check_file()
        with self.engine.begin() as conn:
            conn.execute(schema.run.update().where(schema.run.c.id == run_id, schema.run.c.status == "running")
                         .values(heartbeat_at=_now()))

    @retrying
    def mark_crashed(self, run_ids: list[int], reason: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(schema.run.update().where(schema.run.c.id.in_(run_ids), schema.run.c.status == "running")
                         .values(status="crashed", reason=reason, ended_at=_now()))

    # --- reading -----------------------------------------------------------------------

    def _newest(self, conn: sa.Connection) -> int:
        newest = conn.execute(sa.select(sa.func.max(schema.run.c.id))).scalar()
        if newest is None:
            raise BadInput(f"database {self.url} holds no runs yet; start one with 'kvbench run'")
        return int(newest)

    @reading
    def resolve_run(self, ref: str | int = "latest", prefer_hosts: list[str] | None = None) -> int:
        """A run id from `latest` (the newest whole run, not a re-measurement of another's cases — of
        `prefer_hosts` where they have one, else of any host) or a number; `BadInput` when there is none."""
        with self.engine.connect() as conn:
            newest = self._newest(conn)
            if str(ref) == "latest":
                for hosts in ([prefer_hosts] if prefer_hosts else []) + [None]:
                    query = sa.select(schema.run.c.id, schema.run.c.tags).order_by(schema.run.c.id.desc())
                    if hosts is not None:
                        query = query.where(schema.run.c.host_id.in_(hosts))
                    for row in conn.execute(query):
                        if not is_remeasurement(row.tags) and self._partial(conn, row.id) is None:
                            return int(row.id)
                raise BadInput(f"database {self.url} holds no whole run (every run was interrupted): give a run id")
            try:
                run_id = int(ref)
            except ValueError:
                raise BadInput(f"bad run '{ref}': give a run id, 'latest', 'baseline' or a kvbench JSON file") from None
            if run_id < 1 or run_id > newest or conn.execute(
                    sa.select(schema.run.c.id).where(schema.run.c.id == run_id)).first() is None:
                raise BadInput(f"run {run_id} does not exist in {self.url}")
            return run_id

    def _partial(self, conn: sa.Connection, run_id: int) -> str | None:
        run = conn.execute(sa.select(schema.run.c.status, schema.run.c.cases_planned, schema.run.c.reason)
                           .where(schema.run.c.id == run_id)).one()
        count = conn.execute(sa.select(sa.func.count()).select_from(schema.result)
                             .where(schema.result.c.run_id == run_id)).scalar()
        if run.status not in WHOLE:
            return f"{run.status}{f' ({run.reason})' if run.reason else ''}"
        if run.cases_planned is not None and count < run.cases_planned:
            return f"{run.status} with {count} of its {run.cases_planned} cases"
        return None

    @reading
    def partial(self, run_id: int) -> str | None:
        """Why run `run_id` is not whole (interrupted, crashed, running, short of cases), None if it is."""
        with self.engine.connect() as conn:
            return self._partial(conn, run_id)

    @reading
    def run(self, run_id: int) -> dict:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.run).where(schema.run.c.id == run_id)).mappings().one()
            return dict(row)

    @reading
    def runs(self, status: str | None = None, host_ids: list[str] | None = None) -> list[dict]:
        """Runs (oldest first), of one status and of some hosts where given."""
        query = sa.select(schema.run).order_by(schema.run.c.id)
        if status:
            query = query.where(schema.run.c.status == status)
        if host_ids is not None:
            query = query.where(schema.run.c.host_id.in_(host_ids))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    @reading
    def run_counts(self) -> dict[str, int]:
        """Runs per host id."""
        with self.engine.connect() as conn:
            return {r.host_id: r.n for r in conn.execute(sa.select(schema.run.c.host_id, sa.func.count().label("n"))
                                                         .group_by(schema.run.c.host_id))}

    @reading
    def host(self, host_id: str) -> dict | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.host).where(schema.host.c.id == host_id)).mappings().first()
            return dict(row) if row else None

    @reading
    def context(self, context_id: str) -> dict | None:
        """A context's facts (driver, CUDA, library versions), None if unknown."""
        with self.engine.connect() as conn:
            return conn.execute(sa.select(schema.context.c.facts).where(schema.context.c.id == context_id)).scalar()

    @reading
    def hosts(self, hostname: str | None = None) -> dict[str, dict]:
        """Every host (or those with `hostname`), by id, with its facts."""
        query = sa.select(schema.host)
        if hostname is not None:
            query = query.where(schema.host.c.hostname == hostname)
        with self.engine.connect() as conn:
            return {r["id"]: dict(r) for r in conn.execute(query).mappings()}

    @reading
    def aliases(self) -> dict[str, str]:
        """Older host ids, each mapped to the id its runs were merged into."""
        with self.engine.connect() as conn:
            return {r.old_id: r.host_id for r in conn.execute(sa.select(schema.host_alias))}

    @reading
    def results(self, run_id: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.result).where(schema.result.c.run_id == run_id)
                                .order_by(schema.result.c.id)).mappings()
            return [dict(r) for r in rows]

    @reading
    def latest_ok_results(self, benches: list[str] | None = None) -> list[dict]:
        """The newest ok result of every host and case — chosen by the database (the newest ok run of
        each host and case by GROUP BY over the host/case/run index, joined back to its result), so a
        fleet's history never passes through Python: one row per host and case, with what a fleet
        table shows (bench, params, case, host, rate)."""
        r = schema.result
        newest = (sa.select(r.c.host_id, r.c.case_hash, sa.func.max(r.c.run_id).label("run_id"))
                  .where(r.c.status == "ok").group_by(r.c.host_id, r.c.case_hash))
        if benches:
            newest = newest.where(r.c.bench.in_(benches))
        newest = newest.subquery()
        # A GROUP BY and a join, not a window: SQLite answers it ~4x faster at a fleet's size.
        query = (sa.select(r.c.id, r.c.run_id, r.c.host_id, r.c.bench, r.c.case_hash, r.c.gbps_median)
                 .join(newest, sa.and_(r.c.host_id == newest.c.host_id, r.c.case_hash == newest.c.case_hash,
                                       r.c.run_id == newest.c.run_id))
                 .where(r.c.status == "ok"))
        with self.engine.connect() as conn:
            by_case: dict[tuple[str, str], dict] = {}
            for row in conn.execute(query).mappings():
                key = (row["host_id"], row["case_hash"])   # a case repeated in one run: its last result
                if key not in by_case or row["id"] > by_case[key]["id"]:
                    by_case[key] = dict(row)
            rows = list(by_case.values())
            params = self._params_of_cases(conn, {row["case_hash"]: row["id"] for row in rows})
        for row in rows:
            row["params"], row["status"] = params[row["case_hash"]], "ok"
        return rows

    def _params_of_cases(self, conn: sa.Connection, one_result_per_case: dict[str, int]) -> dict[str, dict]:
        """Each case's parameters, read from one of its results (a case's params are the same in all)."""
        out: dict[str, dict] = {}
        ids = list(one_result_per_case.values())
        for start in range(0, len(ids), 1000):
            for row in conn.execute(sa.select(schema.result.c.case_hash, schema.result.c.params)
                                    .where(schema.result.c.id.in_(ids[start:start + 1000]))):
                out[row.case_hash] = row.params
        return out

    @reading
    def case_fast_ends(self, host_ids: list[str], context_id: str, cases: list[str], before_run: int | None,
                       last: int = 20) -> dict[str, list[float]]:
        """Each case's fast end (p90 GB/s; its median where no p90 was stored) in this host's ok runs of
        one context (newest `last`, oldest first), runs before `before_run` only: the history a
        comparison weighs its change against. Contended results count too (contention only slows a
        sample, so the fast end is what it disturbs least): on a box that is always busy, the allowance
        still comes from the runs that exist."""
        r = schema.result
        query = (sa.select(r.c.case_hash, r.c.gbps_median, r.c.gbps_p90)
                 .join(schema.run, schema.run.c.id == r.c.run_id)
                 .where(r.c.host_id.in_(host_ids), r.c.case_hash.in_(cases), r.c.status == "ok",
                        schema.run.c.context_id == context_id)
                 .order_by(r.c.run_id.desc()))
        if before_run is not None:
            query = query.where(r.c.run_id < before_run)
        out: dict[str, list[float]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                values = out.setdefault(row.case_hash, [])
                if len(values) < last:
                    values.append(row.gbps_p90 or row.gbps_median)
        return {case: values[::-1] for case, values in out.items()}

    @reading
    def run_samples(self, run_id: int) -> dict[int, list[float]]:
        """Every sample of every result of a run, by result id, in one query."""
        query = (sa.select(schema.sample.c.result_id, schema.sample.c.seconds)
                 .join(schema.result, schema.result.c.id == schema.sample.c.result_id)
                 .where(schema.result.c.run_id == run_id).order_by(schema.sample.c.result_id, schema.sample.c.idx))
        out: dict[int, list[float]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                out.setdefault(row.result_id, []).append(row.seconds)
        return out

    @reading
    def host_results(self, host_ids: str | list[str], bench: str | None = None) -> list[dict]:
        """Every result of every run on the host (under any of `host_ids`), oldest first, with its run's
        start time."""
        ids = [host_ids] if isinstance(host_ids, str) else list(host_ids)
        query = (sa.select(schema.result, schema.run.c.started_at, schema.run.c.context_id)
                 .join(schema.run, schema.run.c.id == schema.result.c.run_id)
                 .where(schema.result.c.host_id.in_(ids)).order_by(schema.result.c.id))
        if bench:
            query = query.where(schema.result.c.bench == bench)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    @reading
    def samples(self, result_id: int) -> list[float]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.sample.c.seconds).where(schema.sample.c.result_id == result_id)
                                .order_by(schema.sample.c.idx))
            return [r.seconds for r in rows]

    def dispose(self) -> None:
        self.engine.dispose()
