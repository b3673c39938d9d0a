"""A run's tags: set, removed, and the run a tag picks (`baseline` above all).

Tags live in one JSON column, changed by read-modify-write: the run's row is locked first
(`durable.lock_run`), so eight `kvbench tag` processes on one run keep all eight tags.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import schema
from kvbench.store.durable import lock_run, retrying

BASELINE = "baseline"  # the tag `compare baseline` and `report --baseline baseline` look for
WHOLE = ("complete", "failed")  # ended by itself; "failed" runs hold every case, some of them failed
# a run of some cases of another measured once more (accept's and compare's --measure-again, accept's
# re-sampling): an appendix of that run, never what `latest` names
REMEASURE_OF, RESAMPLE_OF = "remeasure_of", "resample_of"


def is_remeasurement(tags: dict[str, Any] | None) -> bool:
    """Whether a run with these tags measured some cases of another run once more."""
    return bool(tags) and (REMEASURE_OF in tags or RESAMPLE_OF in tags)


def _now() -> datetime:
    return datetime.now(UTC)


class Tags:
    """The tag methods of `Store` (which provides `engine`, `url` and `_partial`)."""

    @retrying
    def set_tag(self, run_id: int, key: str, value: str) -> None:
        """Tag a run (again: the tag's time moves to now, so the run named last is the one `key` picks).
        `BadInput` for `baseline` on a run that is not whole: `compare baseline` would never take it."""
        with self.engine.begin() as conn:
            lock_run(conn, run_id)
            if key == BASELINE:
                why = self._partial(conn, run_id)
                if why is not None:
                    raise BadInput(f"run {run_id} is {why}: a baseline must be a whole run (compare baseline "
                                   "never takes a partial one); tag a complete run")
            row = conn.execute(sa.select(schema.run.c.tags, schema.run.c.tags_at)
                               .where(schema.run.c.id == run_id)).one()
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(
                tags={**(row.tags or {}), key: value}, tags_at={**(row.tags_at or {}), key: _now().isoformat()}))

    @retrying
    def remove_tag(self, run_id: int, key: str) -> bool:
        """Drop tag `key` from a run; False when it had none."""
        with self.engine.begin() as conn:
            lock_run(conn, run_id)
            row = conn.execute(sa.select(schema.run.c.tags, schema.run.c.tags_at)
                               .where(schema.run.c.id == run_id)).one()
            tags, tags_at = dict(row.tags or {}), dict(row.tags_at or {})
            if key not in tags:
                return False
            del tags[key]
            tags_at.pop(key, None)
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(tags=tags, tags_at=tags_at))
            return True

    def tagged_run(self, tag: str, host_ids: list[str] | None = None) -> int | None:
        """The whole run that was tagged `tag` last (on one of `host_ids` where given), None if none is:
        tagging a run again makes it the newest so tagged, whatever its age."""
        query = (sa.select(schema.run.c.id, schema.run.c.tags_at, schema.run.c.started_at)
                 .where(schema.run.c.tags[tag].as_string().is_not(None), schema.run.c.status.in_(WHOLE)))
        if host_ids is not None:
            query = query.where(schema.run.c.host_id.in_(host_ids))
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()

            def tagged_at(row) -> datetime:
                when = (row.tags_at or {}).get(tag)
                return datetime.fromisoformat(when) if when else row.started_at

            for row in sorted(rows, key=lambda r: (tagged_at(r), r.id), reverse=True):
                if self._partial(conn, row.id) is None:
                    return int(row.id)
        return None
