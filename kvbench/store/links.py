"""The results a link matrix is drawn from (every result of some benchmarks, of one run or of all), and
whether a cluster run's pair is stored already."""

from __future__ import annotations

import sqlalchemy as sa

from kvbench.store import schema


class Links:
    """The link-matrix reading of `Store` (which provides `engine`)."""

    def link_results(self, benches: list[str], run_id: int | list[int] | None = None) -> list[dict]:
        """Every result (any status) of `benches`, of run `run_id` (or of these runs: a cluster run's) or of
        every run, oldest first, with
        what a matrix cell shows: status, reason, median GB/s, verified, params and `extra` (where a
        cluster run records its pair); the caller keeps those that name a source and a destination."""
        r = schema.result
        query = (sa.select(r.c.id, r.c.run_id, r.c.host_id, r.c.bench, r.c.params, r.c.case_hash, r.c.status,
                           r.c.reason, r.c.gbps_median, r.c.verified, r.c.extra)
                 .where(r.c.bench.in_(benches)).order_by(r.c.id))
        if run_id is not None:
            query = query.where(r.c.run_id.in_(run_id if isinstance(run_id, list) else [run_id]))
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings()]

    def newest_result_id(self) -> int:
        """The highest result id stored yet (0 when none): a result stored after this call has a higher one."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.max(schema.result.c.id))).scalar() or 0)

    def case_results_after(self, case_hash: str, after_id: int) -> list[dict]:
        """The results of case `case_hash` stored after result `after_id`, by any run of any host (id,
        run_id, status, extra): whether another rank of a cluster run stored a pair already."""
        r = schema.result
        query = (sa.select(r.c.id, r.c.run_id, r.c.status, r.c.extra)
                 .where(r.c.case_hash == case_hash, r.c.id > after_id).order_by(r.c.id))
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings()]

    # --- cluster runs: one launch's N runs, each tagged cluster=<id> (kvbench/cluster/rank.py) ---------------

    def cluster_runs(self, cluster_id: str) -> list[dict]:
        """The runs of cluster run `cluster_id` (id, host_id, status, tags), oldest first; [] when none."""
        run = schema.run
        query = (sa.select(run.c.id, run.c.host_id, run.c.status, run.c.tags)
                 .where(run.c.tags["cluster"].as_string() == cluster_id).order_by(run.c.id))
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings()]

    def newest_cluster(self) -> str | None:
        """The cluster id of the newest run that belongs to a cluster run, None when no run does."""
        run = schema.run
        query = (sa.select(run.c.tags["cluster"].as_string()).where(run.c.tags["cluster"].as_string().is_not(None))
                 .order_by(run.c.id.desc()).limit(1))
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()

    def cluster_of(self, run_id: int) -> str | None:
        """The cluster id run `run_id` belongs to, None when it is a run of its own."""
        run = schema.run
        with self.engine.connect() as conn:
            return conn.execute(sa.select(run.c.tags["cluster"].as_string()).where(run.c.id == run_id)).scalar()
