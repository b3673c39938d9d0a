"""Creating the schema, and upgrading a database an older kvbench made, safely when many writers
open the same database at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import schema

PG_SCHEMA_LOCK = 0x6B76_6265  # the advisory lock writers take while they create or upgrade the schema


def _parsed(value: object, shown: str) -> int:
    """A stored schema_version as a whole number; any other text (`3.0`, empty, `abc`) is a database
    kvbench did not write that way, refused in one line."""
    text = str(value).strip()
    if not text.isdigit():
        raise BadInput(f"database {shown} has schema version {text!r} in kvbench_meta, not a whole number: it was "
                       "changed outside kvbench; restore it from a copy or give another database")
    return int(text)


def _version(conn: sa.Connection, shown: str = "") -> int | None:
    if not sa.inspect(conn).has_table("kvbench_meta"):
        return None
    row = conn.execute(sa.select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
    return _parsed(row.value, shown) if row else None


def file_version(path: Path, shown: str = "") -> int:
    """The schema version of the kvbench SQLite file at `path` (read-only); `shown` names it in errors."""
    from kvbench.store.read_only import read_only_uri

    con = sqlite3.connect(read_only_uri(path), uri=True, timeout=30)
    try:
        row = con.execute("SELECT value FROM kvbench_meta WHERE key='schema_version'").fetchone()
    finally:
        con.close()
    return _parsed(row[0], shown or str(path)) if row else schema.SCHEMA_VERSION


def refuse_newer(version: int | None, shown: str) -> None:
    if version is not None and version > schema.SCHEMA_VERSION:
        raise BadInput(f"database {shown} has schema version {version}; this kvbench uses {schema.SCHEMA_VERSION}: "
                       "use a newer kvbench or a new database")


def _changed_outside(conn: sa.Connection, version: int | None, shown: str) -> int | None:
    """`BadInput` naming what is wrong when a kvbench database was changed behind kvbench's back: a
    table or column of this version dropped, or the version row deleted from a database that holds
    kvbench's tables; found when it is opened, before a run measures anything it could not store.
    Returns the schema version, read again when another kvbench created the schema meanwhile."""
    inspector = sa.inspect(conn)
    tables = set(inspector.get_table_names())
    if version is None:
        ours = sorted(tables & (set(schema.metadata.tables) - {schema.meta.name}))
        # runs stored: not a database another kvbench is creating this moment (its version row comes last)
        if "kvbench_meta" in tables and "run" in tables and conn.execute(sa.select(schema.run.c.id).limit(1)).first():
            # `version` may predate the runs: SQLite reads outside a transaction each see the latest commit, so
            # another kvbench may have made the schema and stored runs since. Its version row was written before
            # any run, so read after the runs it is there, unless it really was removed.
            again = _version(conn, shown)
            if again is not None:
                refuse_newer(again, shown)
                return _changed_outside(conn, again, shown)
            raise BadInput(f"database {shown} has no schema_version in kvbench_meta although it holds kvbench tables "
                           f"({', '.join(ours)}): it was changed outside kvbench; restore it from a copy or give "
                           "another database")
        return None
    if version != schema.SCHEMA_VERSION:
        return version  # an older version: upgraded (or refused read-only) by the caller
    lost_tables, lost_columns = sorted(set(schema.metadata.tables) - tables), []
    for name in sorted(set(schema.metadata.tables) & tables):
        have = {c["name"] for c in inspector.get_columns(name)}
        lost_columns += [f"{name}.{c.name}" for c in schema.metadata.tables[name].columns if c.name not in have]
    lost = [f"a kvbench {what} ({', '.join(names)})" for what, names in (("table", lost_tables),
                                                                          ("column", lost_columns)) if names]
    if lost:
        raise BadInput(f"database {shown} lacks {' and '.join(lost)}: it was changed behind kvbench's back; restore it "
                       "from a copy or give another database")
    return version


def ensure_schema(engine: sa.Engine, shown: str) -> None:
    """Tables and version row created if missing, an older version upgraded; a newer one refused.

    PostgreSQL serializes writers on an advisory lock for the transaction; SQLite's writers are
    serialized by its own lock, and the caller retries one that lost a race for the same table.
    """
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_SCHEMA_LOCK})
        version = _version(conn, shown)
        refuse_newer(version, shown)
        version = _changed_outside(conn, version, shown)
        if version == schema.SCHEMA_VERSION:
            _refresh_indexes(conn, ["result"])  # the only table whose indexes changed within a version
            return
        if version is None and engine.dialect.name == "postgresql":
            # kvbench makes its schema in one transaction under the lock: tables without it are not ours
            # (an SQLite file's are refused when it is opened, see connect.check_sqlite_file)
            theirs = sorted(set(sa.inspect(conn).get_table_names()) & set(schema.metadata.tables))
            if theirs:
                raise BadInput(f"database {shown} holds another program's tables ({', '.join(theirs)}) and no "
                               "kvbench schema: kvbench leaves it as it is; give another database")
        schema.meta.create(conn, checkfirst=True)  # first: a file with tables but no kvbench_meta is not ours
        schema.metadata.create_all(conn)
        if version is not None and version < schema.SCHEMA_VERSION:
            _upgrade(conn, version)
            conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version")
                         .values(value=str(schema.SCHEMA_VERSION)))
        elif _version(conn, shown) is None:
            conn.execute(schema.meta.insert().values(key="schema_version", value=str(schema.SCHEMA_VERSION)))


def _refresh_indexes(conn: sa.Connection, tables: list[str]) -> None:
    """Every index of the schema as it is defined now: a missing one created, one whose columns changed
    (the fleet's index gained `status` without a new schema version: an older kvbench uses it as
    before) made again, once, by the first kvbench that opens the database writable."""
    for name in tables:
        table = schema.metadata.tables[name]
        have = {ix["name"]: ix["column_names"] for ix in sa.inspect(conn).get_indexes(name)}
        for index in table.indexes:
            if index.name in have and have[index.name] != [c.name for c in index.columns]:
                index.drop(conn)
            if have.get(index.name) != [c.name for c in index.columns]:
                index.create(conn)


def _upgrade(conn: sa.Connection, version: int) -> None:
    """From `version` to this one: each later version's added columns and indexes (create_all made
    its new tables), then what a version's data needs (2: result rows carry their run's host; 4: runs
carry their host's first-seen facts, labelled as such)."""
    inspector = sa.inspect(conn)
    for added in (schema.ADDED_IN[v] for v in sorted(schema.ADDED_IN) if v > version):
        for table_name, names in added.items():
            table = schema.metadata.tables[table_name]
            have = {c["name"] for c in inspector.get_columns(table_name)}
            for name in names:
                if name not in have:
                    kind = table.c[name].type.compile(dialect=conn.dialect)
                    conn.execute(sa.text(f"ALTER TABLE {table_name} ADD COLUMN {name} {kind}"))
    _refresh_indexes(conn, list(schema.metadata.tables))
    if version < 2:
        conn.execute(schema.result.update().values(host_id=sa.select(schema.run.c.host_id)
                                                   .where(schema.run.c.id == schema.result.c.run_id)
                                                   .scalar_subquery()))
    if version < 4:  # runs stored before facts were kept per run: their host's first-seen facts, labelled so
        conn.execute(schema.run.update().where(schema.run.c.facts.is_(None))
                     .values(facts=sa.select(schema.host.c.facts).where(schema.host.c.id == schema.run.c.host_id)
                             .scalar_subquery(), facts_source=schema.FACTS_FIRST_SEEN))


def check_version(engine: sa.Engine, shown: str, upgradable: bool = False) -> None:
    """A kvbench database of this version (or an older one, when it may be `upgradable`): for a
    read-only opening, and for a command that changes stored runs."""
    with engine.connect() as conn:
        version = _version(conn, shown)
        refuse_newer(version, shown)
        version = _changed_outside(conn, version, shown)
    if version is None:
        raise BadInput(f"database {shown} holds no kvbench schema yet (run 'kvbench run' first)")
    refuse_newer(version, shown)
    if version < schema.SCHEMA_VERSION and not upgradable:
        raise BadInput(f"database {shown} has schema version {version} and cannot be upgraded here (read-only): "
                       "open it once where it is writable with any kvbench command")
