"""Merging a host id into another (an older kvbench's id of this same box): its runs and results move,
the old id stays as an alias with its facts, and a running run of it is refused (it would go on
writing under the old id)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import schema
from kvbench.store.durable import retrying


def _now() -> datetime:
    return datetime.now(UTC)


class HostMerge:
    """The merge methods of `Store` (which provides `engine`, `url` and `_insert_once`)."""

    @retrying
    def merge_host(self, old_id: str, new_id: str) -> int:
        """Make `old_id`'s runs `new_id`'s (an older kvbench's id of this same box); returns how many
        runs moved. The old id is kept as an alias, with its facts. `BadInput` while a run of `old_id`
        is running (it would go on writing under the old id): merge once it has ended."""
        with self.engine.begin() as conn:
            old = conn.execute(sa.select(schema.host).where(schema.host.c.id == old_id)).mappings().first()
            if old is None:
                return self._move_strays(conn, old_id)
            running = [r.id for r in conn.execute(sa.select(schema.run.c.id).where(
                schema.run.c.host_id == old_id, schema.run.c.status == "running").order_by(schema.run.c.id))]
            if running:
                raise BadInput(f"host '{old_id}' has run(s) {', '.join(map(str, running))} still running in "
                               f"{self.url}: merge it once they have ended")
            if conn.execute(sa.select(schema.host.c.id).where(schema.host.c.id == new_id)).first() is None:
                conn.execute(schema.host.insert().values(id=new_id, hostname=old["hostname"], facts=old["facts"],
                                                         first_seen=old["first_seen"]))
            moved = conn.execute(schema.run.update().where(schema.run.c.host_id == old_id).values(host_id=new_id)).rowcount
            conn.execute(schema.result.update().where(schema.result.c.host_id == old_id).values(host_id=new_id))
            conn.execute(schema.replay.update().where(schema.replay.c.host_id == old_id).values(host_id=new_id))
            self._insert_once(conn, schema.host_alias, {"old_id": old_id, "host_id": new_id, "merged_at": _now(),
                                                        "old_facts": old["facts"]})
            conn.execute(schema.host.delete().where(schema.host.c.id == old_id))
            return int(moved)

    def _move_strays(self, conn: sa.Connection, old_id: str) -> int:
        """Runs and results still carrying an id merged away (an older kvbench wrote them during the
        merge) go where it was merged; `BadInput` when `old_id` is no host and no merged id."""
        into = conn.execute(sa.select(schema.host_alias.c.host_id)
                            .where(schema.host_alias.c.old_id == old_id)).scalar()
        if into is None:
            raise BadInput(f"no host '{old_id}' in {self.url} (kvbench host list shows them)")
        moved = conn.execute(schema.run.update().where(schema.run.c.host_id == old_id).values(host_id=into)).rowcount
        results = conn.execute(schema.result.update().where(schema.result.c.host_id == old_id)
                               .values(host_id=into)).rowcount
        if not moved and not results:
            raise BadInput(f"no host '{old_id}' in {self.url}: it was merged into '{into}' already, and nothing is "
                           "left under it (kvbench host list shows the hosts)")
        return int(moved)
