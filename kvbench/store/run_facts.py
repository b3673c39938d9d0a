"""The inventory each run was measured on (schema version 4), read back for drift (kvbench/analyze/accept/drift.py)."""

from __future__ import annotations

import sqlalchemy as sa

from kvbench.store import schema
from kvbench.store.durable import reading


class RunFacts:
    engine: sa.Engine

    @reading
    def runs_facts(self, host_ids: list[str], up_to: int | None = None) -> list[tuple[int, dict | None, str | None]]:
        """(run id, facts, facts source) of every run of `host_ids` (up to run `up_to`), oldest first:
        the inventory history drift is read from (kvbench/analyze/accept/drift.py)."""
        r = schema.run
        query = sa.select(r.c.id, r.c.facts, r.c.facts_source).where(r.c.host_id.in_(host_ids)).order_by(r.c.id)
        if up_to is not None:
            query = query.where(r.c.id <= up_to)
        with self.engine.connect() as conn:
            return [(int(row.id), row.facts, row.facts_source) for row in conn.execute(query)]
