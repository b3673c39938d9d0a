"""The results a link matrix is drawn from (every result of some benchmarks, of one run or of all), and
whether a cluster run's pair is stored already."""

from __future__ import annotations

import sqlalchemy as sa

from kvbench.store import schema


class Links:
    """The link-matrix reading of `Store` (which provides `engine`)."""

    def link_results(self, benches: list[str], run_id: int | None = None) -> list[dict]:
        """Every result (any status) of `benches`, of run `run_id` or of every run, oldest first, with
        what a matrix cell shows: status, reason, median GB/s, verified, params and `extra` (where a
        cluster run records its pair); the caller keeps those that name a source and a destination."""
        r = schema.result
        query = (sa.select(r.c.id, r.c.run_id, r.c.host_id, r.c.bench, r.c.params, r.c.case_hash, r.c.status,
                           r.c.reason, r.c.gbps_median, r.c.verified, r.c.extra)
                 .where(r.c.bench.in_(benches)).order_by(r.c.id))
        if run_id is not None:
            query = query.where(r.c.run_id == run_id)
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
