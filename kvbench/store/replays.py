"""Stored replays (schema version 5): each `kvbench replay` projection with what it was derived from
(the trace's digest, the policy, the capacities, the result ids each price came from), so a plan can be
re-derived and compared across hosts. A projection is no measurement: it never enters `result`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from kvbench.store import schema
from kvbench.store.durable import reading, retrying

SUMMARY = ("id", "host_id", "created_at", "kvbench_version", "trace_name", "trace_sha256", "trace_block_tokens",
           "engine_block_tokens", "model", "dtype", "tp", "policy", "restore_into", "executed_run_id")


def _iso(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    if out.get("created_at") is not None:
        out["created_at"] = out["created_at"].isoformat()
    return out


class Replays:
    engine: sa.Engine

    @retrying
    def add_replay(self, values: dict[str, Any]) -> int:
        """A replay stored (`values`: the `replay` table's columns but id and created_at); its id."""
        with self.engine.begin() as conn:
            row = conn.execute(schema.replay.insert().values(created_at=datetime.now(UTC), **values)
                               .returning(schema.replay.c.id)).first()
            return int(row.id)

    @reading
    def replay(self, replay_id: int) -> dict[str, Any] | None:
        """Stored replay `replay_id`, every column (created_at as ISO 8601); None when there is none."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.replay).where(schema.replay.c.id == replay_id)).mappings().first()
        return None if row is None else _iso(dict(row))

    @reading
    def replays(self, host_ids: list[str] | None = None) -> list[dict[str, Any]]:
        """Every stored replay (of `host_ids`), oldest first: what it was derived from and its configurations,
        without the whole document."""
        r = schema.replay
        query = sa.select(*(r.c[name] for name in SUMMARY), r.c.configs).order_by(r.c.id)
        if host_ids is not None:
            query = query.where(r.c.host_id.in_(host_ids))
        with self.engine.connect() as conn:
            return [_iso(dict(row)) for row in conn.execute(query).mappings()]
