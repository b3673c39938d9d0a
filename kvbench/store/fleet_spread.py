"""The fleet's outlier arithmetic, done by the database: the newest ok result of each host and case,
grouped by case and SKU, each group's median and robust spread (MAD) by window functions, and each
host's deviation and outlier flag — so `fleet --outliers` over millions of results brings back only
the rows it shows (SQLAlchemy Core; the same statement on SQLite and PostgreSQL, where each understands
the hint that the newest rows' ids be materialised). docs/speed.md has its plan and its time at 2 M results.

The rule itself is the analysis layer's (kvbench/analyze/spread.py `robust_spread`); it passes its
constants in, and tests/analyze/test_fleet_sql.py holds both answers equal."""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa

from kvbench.store import schema
from kvbench.store.durable import reading


def _middle_mean(ranked: sa.Subquery, rank: str, value: sa.ColumnElement) -> sa.ColumnElement:
    """Over each row's (case, SKU) group: the mean of `value` on the group's middle row(s) by `rank`
    (its median), a window aggregate so no row is joined to its group."""
    n = ranked.c.n
    middle = sa.case((ranked.c[rank].in_([(n + 1) // 2, (n + 2) // 2]), value))  # NULL elsewhere: not averaged
    return sa.func.avg(middle).over(partition_by=(ranked.c.case_hash, ranked.c.sku))


class FleetSpread:
    """The fleet reading of `Store` (which provides `engine` and `_params_of_cases`)."""

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
    def fleet_spread(self, sku_of_host: dict[str, str], unknown_sku: str, benches: list[str] | None = None,
                     k: float = 3.0, floor: float = 0.05, sd_per_mad: float = 1.4826,
                     outliers_only: bool = False) -> list[dict[str, Any]]:
        """The newest ok result of each host and case (a case repeated in that run: its last result),
        with its SKU (`sku_of_host`; `unknown_sku` for a host not in it), its group's median rate (GB/s),
        `deviation` (rate / median - 1; 0 when the median is 0) and `outlier`: the group has 3 or more
        hosts, |deviation| >= `floor`, and the rate is more than `k` robust standard deviations
        (`sd_per_mad` × MAD, GB/s) from the median, or the MAD is 0. Only outliers when `outliers_only`.
        Each row: host_id, bench, case_hash, params, gbps, median, deviation, outlier."""
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

        picked = sa.select(last.c.id, last.c.host_id, column_of_last("bench").label("bench"), last.c.case_hash,
                           column_of_last("gbps_median").label("gbps"))
        if benches:
            # here, not in `newest`, so the grouping reads only the (host, case, run, status) index: a
            # case's hash names its benchmark, so filtering a case's newest row is filtering the case
            picked = picked.where(column_of_last("bench").in_(benches))
        # Each host's SKU (worked out from its facts in Python: one row per host) as one CASE with an IN
        # list per SKU, written inline: both databases look a value up in such a list by hash or b-tree,
        # where a join to a VALUES list would scan it once per result.
        hosts_of: dict[str, list[str]] = {}
        for host_id, sku in sorted(sku_of_host.items()):
            hosts_of.setdefault(sku, []).append(host_id)
        sku = (sa.case(*((last.c.host_id.in_(sa.bindparam(f"hosts_{n}", ids, expanding=True, literal_execute=True)),
                          sa.literal(name, sa.String)) for n, (name, ids) in enumerate(sorted(hosts_of.items()))),
                       else_=sa.literal(unknown_sku, sa.String))
               if hosts_of else sa.literal(unknown_sku, sa.String))
        picked = picked.add_columns(sku.label("sku"))
        picked = picked.subquery("picked")
        # Each step one window over the (case, SKU) groups, never a join back to a per-group table (SQLite
        # would compare every row with every group): a median is the mean of the group's middle row(s)
        # by rank — one row for an odd count, two for an even one, as numpy's median.
        group = (picked.c.case_hash, picked.c.sku)
        ranked = sa.select(*picked.c, sa.func.row_number().over(partition_by=group, order_by=picked.c.gbps)
                           .label("rank"), sa.func.count().over(partition_by=group).label("n")).subquery("ranked")
        medians = sa.select(*ranked.c, _middle_mean(ranked, "rank", ranked.c.gbps).label("median")).subquery("medians")
        dist = sa.func.abs(medians.c.gbps - medians.c.median)
        dists = sa.select(*medians.c, dist.label("dist"),
                          sa.func.row_number().over(partition_by=(medians.c.case_hash, medians.c.sku), order_by=dist)
                          .label("dist_rank")).subquery("dists")
        spread = sa.select(*dists.c, _middle_mean(dists, "dist_rank", dists.c.dist).label("mad")).subquery("spread")
        sd = spread.c.mad * sa.literal(sd_per_mad, sa.Float)
        deviation = sa.case((spread.c.median != 0, spread.c.gbps / spread.c.median - 1), else_=0.0)
        outlier = sa.and_(spread.c.n >= 3, sa.func.abs(deviation) >= sa.literal(floor, sa.Float),
                          sa.or_(sd == 0, spread.c.dist > sa.literal(k, sa.Float) * sd))
        query = sa.select(spread.c.id, spread.c.host_id, spread.c.bench, spread.c.case_hash, spread.c.sku,
                          spread.c.gbps, spread.c.median, deviation.label("deviation"),
                          sa.case((outlier, 1), else_=0).label("outlier"))
        if outliers_only:
            query = query.where(outlier)
        with self.engine.connect() as conn:
            if conn.dialect.name == "postgresql" and self._understands((11,), None):
                # Its cost estimate is far above jit_above_cost, so PostgreSQL compiles the statement's
                # expressions first: at 2 M results that cost 1.09 s against 0.74 s without (EXPLAIN
                # ANALYZE, PostgreSQL 15), the compiling never paid back. For this transaction only.
                conn.execute(sa.text("SET LOCAL jit = off"))
            rows = [dict(row) for row in conn.execute(query).mappings()]
            params = self._params_of_cases(conn, {row["case_hash"]: row["id"] for row in rows})
        for row in rows:
            row["params"], row["outlier"] = params[row["case_hash"]], bool(row["outlier"])
        return rows
