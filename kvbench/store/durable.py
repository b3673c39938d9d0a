"""Writes that outlive what a database goes through during a long run.

* A PostgreSQL connection lost mid-run (a server restart, `pg_terminate_backend`, an
  `idle_session_timeout` shorter than a case) costs nothing: the engine pings a pooled connection
  before use, and a write that fails because the connection went away is made again on a new one
  (its rows are still in memory), for up to RECONNECT_WAIT_S in all (one line says so at once; a
  server still away after that fails the writes that follow at once). A connection lost at COMMIT leaves it
  unknown whether the server committed: writes that add rows check before writing again
  (`Store.add_results`, `Store.begin_run`), so nothing is stored twice.
* An SQLite file deleted or replaced while a run has it open is found before the next write (the
  path no longer names the file kvbench opened: another inode or device), and refused loudly,
  instead of results going into a file nobody can reach or a fresh empty one.
* Writes that read a run's row and then change it (tags, the run's host) lock that row first, so
  concurrent writers never lose each other's changes.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from kvbench.errors import BadInput
from kvbench.redact import redact
from kvbench.store import schema

RECONNECT_WAIT_S = 120.0  # a PostgreSQL restart takes seconds; a server that stays away ends the run
# what PostgreSQL and libpq say when the connection, not the statement, failed
_GONE = ("terminating connection", "server closed the connection", "connection is closed", "connection refused",
         "the database system is starting up", "the database system is shutting down", "consuming input failed",
         "could not receive data", "could not send data", "connection to server", "ssl connection has been closed",
         "idle-session timeout", "connection has been lost", "no connection to the server")

T = TypeVar("T")


class Unwritable(BadInput):
    """The database can no longer take this process's writes (its file was deleted or replaced)."""


def connection_lost(exc: DBAPIError) -> bool:
    """True when `exc` is the connection going away (worth a new connection), not a statement's fault."""
    return bool(getattr(exc, "connection_invalidated", False)) or any(s in str(exc.orig).lower() for s in _GONE)


def retrying(write: Callable[..., T]) -> Callable[..., T]:
    """A Store write, checked against a replaced SQLite file before and after, and made again on a new connection
    when the connection was lost (each write is one transaction: a lost one committed nothing)."""

    @functools.wraps(write)
    def again(store, *args, **kwargs) -> T:
        pause = 0.2
        while True:
            store.check_file()
            try:
                done = write(store, *args, **kwargs)
                store.check_file()  # again: a file deleted during the write took the write with it
                store.lost_since = None
                return done
            except DBAPIError as exc:  # (only a server's connection is lost: SQLite never says these words)
                if not connection_lost(exc):
                    raise
                # One wait per outage, not per write: a server that stayed away the whole bound fails the
                # next writes (marking the run failed) at their first attempt.
                if store.lost_since is None:
                    store.lost_since = time.monotonic()
                    reason = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
                    print(redact(f"kvbench: database {store.url} unreachable ({reason}): trying again for up to "
                                 f"{RECONNECT_WAIT_S:.0f} s"), file=sys.stderr, flush=True)
                if time.monotonic() - store.lost_since > RECONNECT_WAIT_S:
                    raise
            time.sleep(random.uniform(pause, 2 * pause))
            pause = min(2 * pause, 5.0)

    return again


READ_ATTEMPTS = 5  # a read is cheap to repeat; a server still gone after these is said in one line


def reading(read: Callable[..., T]) -> Callable[..., T]:
    """A Store read made again on a new connection when the connection was lost under it (a failover, an
    idle-session kill, pg_terminate_backend: hostile trial H23 saw 84-line tracebacks), up to READ_ATTEMPTS
    times over a few seconds; then one line naming the database (BadInput, exit 2). A read commits nothing,
    so repeating it is safe."""

    @functools.wraps(read)
    def again(store, *args, **kwargs) -> T:
        pause = 0.1
        for attempt in range(READ_ATTEMPTS):
            try:
                return read(store, *args, **kwargs)
            except DBAPIError as exc:
                if not connection_lost(exc):
                    raise
                if attempt == READ_ATTEMPTS - 1:
                    reason = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
                    raise BadInput(redact(f"lost the connection to database {store.url} while reading, "
                                          f"{READ_ATTEMPTS} times ({reason}): try again once it is reachable")) from None
            time.sleep(random.uniform(pause, 2 * pause))
            pause = min(2 * pause, 2.0)
        raise AssertionError("unreachable")  # the loop returns or raises

    return again


class FileIdentity:
    """The SQLite file a store opened, by device and inode: a path that names another file now (or
    none) means the database was deleted or replaced under a running kvbench."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key = self._key()
        self.shown = str(path)  # what the error names: the store's redacted URL, once it has one
        WRITTEN.append(self)

    def _key(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def check(self, shown: str) -> None:
        """`Unwritable` when the path no longer names the file that was opened."""
        now = self._key()
        if self.key is None or now != self.key:  # None: gone before its identity could be taken
            # a path that names nothing may have been moved (its results intact elsewhere): never say they are gone
            what, was = (("moved or deleted", "the file") if now is None
                         else ("replaced by another file", "the file that was there"))
            raise Unwritable(f"database '{shown}' was {what} while kvbench had it open: nothing more can be "
                             f"stored in it (the results written before are in {was} if it was moved, gone with it "
                             "if it was deleted)")


# Every SQLite file this process opened to write: the command checks them once more at its very end,
# so a file deleted after a write's own check (while the tables print) still fails the command.
WRITTEN: list[FileIdentity] = []


def check_written_files() -> None:
    """`Unwritable` when a database file this process opened to write was deleted or replaced since."""
    for identity in WRITTEN:
        identity.check(identity.shown)


def lock_run(conn: sa.Connection, run_id: int) -> bool:
    """Take run `run_id`'s row for this transaction before reading it (PostgreSQL: its row lock;
    SQLite: the database's write lock), so a read-modify-write never races another writer; False
    when there is no such run."""
    return conn.execute(schema.run.update().where(schema.run.c.id == run_id)
                        .values(status=schema.run.c.status)).rowcount > 0


def results_committed(conn: sa.Connection, run_id: int, count: int, seen: dict[str, int]) -> list[int] | None:
    """The ids of `count` results an earlier attempt of this write committed before its connection was
    lost (at COMMIT), else None. `seen` carries from attempt to attempt how many results the run had
    when the first attempt wrote: a retry that finds exactly `count` more finds its own write. The
    caller holds the run's row lock, so no other writer of the run comes between."""
    had = conn.execute(sa.select(sa.func.count()).select_from(schema.result)
                       .where(schema.result.c.run_id == run_id)).scalar_one()
    if "had" in seen and had == seen["had"] + count:
        ids = conn.execute(sa.select(schema.result.c.id).where(schema.result.c.run_id == run_id)
                           .order_by(schema.result.c.id.desc()).limit(count))
        return sorted(int(r.id) for r in ids)
    seen["had"] = had
    return None


def run_committed(conn: sa.Connection, values: dict, seen: dict[str, int]) -> int | None:
    """The run an earlier attempt of `begin_run` committed before its connection was lost (same host,
    owner and start, to the microsecond), else None; `seen` says whether there was an earlier attempt."""
    r = schema.run
    tried, seen["tried"] = seen.get("tried"), 1
    if not tried:
        return None
    found = conn.execute(sa.select(r.c.id).where(
        r.c.host_id == values["host_id"], r.c.started_at == values["started_at"],
        r.c.pid.is_not_distinct_from(values["pid"]), r.c.machine.is_not_distinct_from(values["machine"]),
        r.c.boot_id.is_not_distinct_from(values["boot_id"]))).scalar()
    return None if found is None else int(found)
