"""The results a link matrix is drawn from: every result of some benchmarks, of one run or of all."""

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
