"""The fleet's reading, done by the database: the newest ok result of each host and case found through the
covering index, its rate looked up by primary key — so `fleet` over millions of results brings back one row
per host and case (SQLAlchemy Core; the same statement on SQLite and PostgreSQL, where each understands the
hint that the newest rows' ids be materialised). docs/speed.md has its plan and its time at 2 M results.

The outlier rule is the analysis layer's (kvbench/analyze/spread.py `robust_spread`, applied by
analyze/fleet.py `fleet_in_database`); tests/analyze/test_fleet_sql.py holds its answer equal to `fleet`
over every stored result."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa

from kvbench.store import schema
from kvbench.store.durable import reading


class FleetSpread:
    """The fleet reading of `Store` (which provides `engine`)."""

    engine: sa.Engine

    def _understands(self, postgresql: tuple[int, ...] | None, sqlite: tuple[int, ...] | None) -> bool:
        """Whether this database is at least the version given for its kind (None: never)."""
        if self.engine.dialect.name == "sqlite":
            return sqlite is not None and sqlite3.sqlite_version_info >= sqlite
        server = self.engine.dialect.server_version_info  # known once a connection was made (open_store makes one)
        return postgresql is not None and server is not None and tuple(server) >= postgresql

    @reading
    def has_ok_results(self, benches: list[str] | None = None) -> bool:
        """Whether any ok result (of `benches`, when given) is stored."""
        r = schema.result
        query = sa.select(r.c.id).where(r.c.status == "ok").limit(1)
        if benches:
            query = query.where(r.c.bench.in_(benches))
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None

    @reading
    def newest_ok_rates(self, benches: list[str] | None = None) -> list[tuple[int, str, str, float]]:
        """(result id, host id, case, median GB/s) of the newest ok result of each host and case (a case
        repeated in that run: its last result), of `benches` when given: one row per host and case, however
        many runs the database holds. The outlier arithmetic over them is the analysis layer's
        (analyze/fleet.py `fleet_in_database`): done here by window functions it cost SQLite 0.35 CPU s
        of 0.55 at 40 k newest rows, in Python 0.02 s (docs/speed.md)."""
        r = schema.result
        newest = (sa.select(r.c.host_id, r.c.case_hash, sa.func.max(r.c.run_id).label("run_id"))
                  .where(r.c.status == "ok").group_by(r.c.host_id, r.c.case_hash).cte("newest"))
        # the last ok result of that run (a case repeated in one run), sought in the index per group: a
        # correlated lookup, not a second grouping of the joined rows (a third less CPU on SQLite)
        inner = r.alias("inner")
        last = (sa.select(newest.c.host_id, newest.c.case_hash,
                          sa.select(sa.func.max(inner.c.id))
                          .where(inner.c.host_id == newest.c.host_id, inner.c.case_hash == newest.c.case_hash,
                                 inner.c.run_id == newest.c.run_id, inner.c.status == "ok")
                          .correlate(newest).scalar_subquery().label("id"))
                .cte("last"))
        if self._understands((12,), (3, 35)):  # the first of each with the keyword; before, `last` is inlined
            last = last.prefix_with("MATERIALIZED")
        # Its columns, each looked up by primary key per row (a correlated subquery is always a lookup): joined
        # instead, PostgreSQL hashed the whole table (2 M rows) to find 40 k of them, over half its time; and
        # `last` materialised there, so each lookup reuses its id rather than seeking it again.
        by_id = r.alias("by_id")

        def column_of_last(column: str) -> sa.ScalarSelect:
            return sa.select(by_id.c[column]).where(by_id.c.id == last.c.id).correlate(last).scalar_subquery()

        query = sa.select(last.c.id, last.c.host_id, last.c.case_hash, column_of_last("gbps_median").label("gbps"))
        if benches:
            # here, not in `newest`, so the grouping reads only the (host, case, run, status) index: a
            # case's hash names its benchmark, so filtering a case's newest row is filtering the case
            query = query.where(column_of_last("bench").in_(benches))
        with self.engine.connect() as conn:
            if conn.dialect.name == "postgresql" and self._understands((11,), None):
                # Its cost estimate is far above jit_above_cost, so PostgreSQL compiles the statement's
                # expressions first: at 2 M results that cost 1.09 s against 0.74 s without (EXPLAIN
                # ANALYZE, PostgreSQL 15), the compiling never paid back. For this transaction only.
                conn.execute(sa.text("SET LOCAL jit = off"))
            return [(row[0], row[1], row[2], row[3]) for row in conn.execute(query)]

    @reading
    def cases_named(self, one_result_per_case: dict[str, int]) -> dict[str, tuple[str, dict]]:
        """Each case's benchmark and parameters, read from one of its results (the same in all)."""
        out: dict[str, tuple[str, dict]] = {}
        ids = list(one_result_per_case.values())
        r = schema.result
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 1000):
                for row in conn.execute(sa.select(r.c.case_hash, r.c.bench, r.c.params)
                                        .where(r.c.id.in_(ids[start:start + 1000]))):
                    out[row.case_hash] = (row.bench, row.params)
        return out
