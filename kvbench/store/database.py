"""Reading and writing results. Each finished result is committed at once, so an interrupted
run keeps everything it measured."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from kvbench.errors import BadInput
from kvbench.store import schema

DEFAULT_PATH = Path("results") / "kvbench.sqlite"


def default_url() -> str:
    """`KVBENCH_DB` if set, else the embedded SQLite file under ./results/."""
    return os.environ.get("KVBENCH_DB") or f"sqlite:///{DEFAULT_PATH}"


def redact(url: str) -> str:
    """The URL with any password replaced by ***."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _now() -> datetime:
    return datetime.now(UTC)


def open_store(url: str | None = None) -> Store:
    """Connect, create the tables if new, check the schema version. Raises `BadInput` on failure."""
    url = url or default_url()
    try:
        parsed = sa.engine.make_url(url)
    except ArgumentError:
        raise BadInput(f"bad database URL '{redact(url)}': expected e.g. sqlite:///results/kvbench.sqlite") from None
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        connect_args["timeout"] = 30
    elif parsed.get_backend_name() == "postgresql":
        connect_args["connect_timeout"] = 5
    try:
        engine = sa.create_engine(parsed, connect_args=connect_args)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise BadInput(f"database URL '{redact(url)}' needs a driver that is not installed: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    try:
        store = Store(engine)
        store.ensure_schema()
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise BadInput(f"cannot reach database '{redact(url)}': {reason}") from None
    return store


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Store:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    @property
    def url(self) -> str:
        return redact(self.engine.url.render_as_string(hide_password=True))

    def ensure_schema(self) -> None:
        schema.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
            if row is None:
                conn.execute(schema.meta.insert().values(key="schema_version", value=str(schema.SCHEMA_VERSION)))
            elif int(row.value) != schema.SCHEMA_VERSION:
                raise BadInput(
                    f"database {self.url} has schema version {row.value}; this kvbench uses "
                    f"{schema.SCHEMA_VERSION}: use a new database file or an older kvbench"
                )

    # --- writing -----------------------------------------------------------------------

    def ensure_host(self, host_id: str, hostname: str, facts: dict) -> None:
        with self.engine.begin() as conn:
            if conn.execute(sa.select(schema.host.c.id).where(schema.host.c.id == host_id)).first() is None:
                conn.execute(schema.host.insert().values(id=host_id, hostname=hostname, facts=facts, first_seen=_now()))

    def ensure_context(self, context_id: str, facts: dict) -> None:
        with self.engine.begin() as conn:
            if conn.execute(sa.select(schema.context.c.id).where(schema.context.c.id == context_id)).first() is None:
                conn.execute(schema.context.insert().values(id=context_id, facts=facts))

    def begin_run(self, *, host_id: str, context_id: str, suite: str | None, suite_hash: str | None,
                  kvbench_version: str, git_sha: str | None, git_dirty: bool | None,
                  tags: dict, system_state: dict) -> int:
        with self.engine.begin() as conn:
            return int(conn.execute(schema.run.insert().values(
                host_id=host_id, context_id=context_id, started_at=_now(), status="running", suite=suite,
                suite_hash=suite_hash, kvbench_version=kvbench_version, git_sha=git_sha, git_dirty=git_dirty,
                tags=tags, system_state=system_state,
            )).inserted_primary_key[0])

    def finish_run(self, run_id: int, status: str, reason: str | None = None, end_state: dict | None = None) -> None:
        """Close the run; `end_state` is kept beside the start state as system_state["at_end"]."""
        with self.engine.begin() as conn:
            values: dict[str, Any] = {"status": status, "reason": reason, "ended_at": _now()}
            if end_state is not None:
                state = conn.execute(sa.select(schema.run.c.system_state).where(schema.run.c.id == run_id)).scalar_one()
                values["system_state"] = {**(state or {}), "at_end": end_state}
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(**values))

    def add_result(self, run_id: int, row: dict, samples_s: list[float]) -> int:
        """Insert one result row and all of its samples in one transaction."""
        with self.engine.begin() as conn:
            result_id = int(conn.execute(schema.result.insert().values(run_id=run_id, **row)).inserted_primary_key[0])
            if samples_s:
                conn.execute(schema.sample.insert(), [
                    {"result_id": result_id, "idx": i, "seconds": s} for i, s in enumerate(samples_s)])
            return result_id

    # --- reading -----------------------------------------------------------------------

    def resolve_run(self, ref: str | int = "latest") -> int:
        """A run id from `latest` or a number; `BadInput` when there is no such run."""
        with self.engine.connect() as conn:
            newest = conn.execute(sa.select(sa.func.max(schema.run.c.id))).scalar()
            if newest is None:
                raise BadInput(f"database {self.url} holds no runs yet; start one with 'kvbench run'")
            if str(ref) == "latest":
                return int(newest)
            try:
                run_id = int(ref)
            except ValueError:
                raise BadInput(f"bad run '{ref}': give a run id or 'latest'") from None
            if conn.execute(sa.select(schema.run.c.id).where(schema.run.c.id == run_id)).first() is None:
                raise BadInput(f"run {run_id} does not exist in {self.url}")
            return run_id

    def run(self, run_id: int) -> dict:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.run).where(schema.run.c.id == run_id)).mappings().one()
            return dict(row)

    def runs(self) -> list[dict]:
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.select(schema.run).order_by(schema.run.c.id)).mappings()]

    def host(self, host_id: str) -> dict | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.host).where(schema.host.c.id == host_id)).mappings().first()
            return dict(row) if row else None

    def results(self, run_id: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.result).where(schema.result.c.run_id == run_id)
                                .order_by(schema.result.c.id)).mappings()
            return [dict(r) for r in rows]

    def hosts(self) -> dict[str, dict]:
        with self.engine.connect() as conn:
            return {r["id"]: dict(r) for r in conn.execute(sa.select(schema.host)).mappings()}

    def all_results(self, bench: str | None = None) -> list[dict]:
        """Results of every run on every host (oldest first), with host id and run start."""
        query = (sa.select(schema.result, schema.run.c.host_id, schema.run.c.started_at, schema.run.c.context_id)
                 .join(schema.run, schema.run.c.id == schema.result.c.run_id).order_by(schema.result.c.id))
        if bench:
            query = query.where(schema.result.c.bench == bench)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def set_tag(self, run_id: int, key: str, value: str) -> None:
        with self.engine.begin() as conn:
            tags = conn.execute(sa.select(schema.run.c.tags).where(schema.run.c.id == run_id)).scalar_one()
            conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(tags={**(tags or {}), key: value}))

    def host_results(self, host_id: str, bench: str | None = None) -> list[dict]:
        """Every result of every run on `host_id` (oldest first), with its run's start time."""
        query = (sa.select(schema.result, schema.run.c.started_at, schema.run.c.context_id)
                 .join(schema.run, schema.run.c.id == schema.result.c.run_id)
                 .where(schema.run.c.host_id == host_id).order_by(schema.result.c.id))
        if bench:
            query = query.where(schema.result.c.bench == bench)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def samples(self, result_id: int) -> list[float]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.sample.c.seconds).where(schema.sample.c.result_id == result_id)
                                .order_by(schema.sample.c.idx))
            return [r.seconds for r in rows]

    def dispose(self) -> None:
        self.engine.dispose()

