"""Opening a results database: any SQLAlchemy URL, checked before anything is written.

* A file that is not a kvbench database (random bytes, another program's SQLite file, a corrupt
  one) is refused with one line, and left byte for byte as it was: it is inspected through a
  read-only connection before any pragma or table could touch it.
* Read-only commands open read-only: they never create a database or its folder, and they read a
  database on a read-only mount.
* Many writers may open a fresh database at once (8 processes on one SQLite file, 100 on one
  PostgreSQL): creating the schema and its version row is safe under that race.
* A password never appears in what kvbench prints.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from kvbench.errors import BadInput
from kvbench.redact import redact  # noqa: F401  (kvbench.store.connect.redact, as before)
from kvbench.store import migrate, schema
from kvbench.store.durable import FileIdentity
from kvbench.store.read_only import read_only_uri

DEFAULT_PATH = Path("results") / "kvbench.sqlite"
SQLITE_MAGIC = b"SQLite format 3\x00"


def default_url() -> str:
    """`KVBENCH_DB` if set, else the embedded SQLite file under ./results/."""
    return os.environ.get("KVBENCH_DB") or f"sqlite:///{DEFAULT_PATH}"


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite URL (None for another database, an in-memory one, or a URL that does
    not parse: the store says why when it opens)."""
    try:
        parsed = parse_url(url)
    except BadInput:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


def _escape_userinfo(url: str) -> str:
    """`scheme://user:p@ss@host/db` → `scheme://user:p%40ss@host/db`: a password holding '@' is taken
    as meant (the host is what follows the last '@'), not as a host that would show up in errors."""
    match = re.match(r"^([^:/]+://)([^/?#]*)@([^@/?#]*)(.*)$", url)
    if not match or "@" not in match.group(2):
        return url
    return f"{match.group(1)}{match.group(2).replace('@', '%40')}@{match.group(3)}{match.group(4)}"


def parse_url(url: str) -> sa.engine.URL:
    try:
        parsed = sa.engine.make_url(_escape_userinfo(url))
    except (ArgumentError, ValueError):
        raise BadInput(f"bad database URL '{redact(url)}': expected e.g. sqlite:///results/kvbench.sqlite or "
                       "postgresql://user:password@host/db") from None
    scheme = url.split(":", 1)[0]
    if scheme.split("+")[0].lower() == "postgres" or scheme != scheme.lower():
        fixed = "postgresql" if scheme.split("+")[0].lower() == "postgres" else scheme.lower()
        raise BadInput(f"bad database URL '{redact(url)}': write {fixed}:// (SQLAlchemy's name for it, in lower case)")
    if parsed.get_backend_name() == "sqlite" and parsed.host:
        raise BadInput(f"bad database URL '{redact(url)}': a file is sqlite:///relative/path.sqlite (three slashes) "
                       "or sqlite:////absolute/path.sqlite (four)")
    if parsed.get_backend_name() == "sqlite" and parsed.query:  # pysqlite would ignore them (mode=ro included)
        raise BadInput(f"bad database URL '{redact(url)}': SQLite URLs take no options "
                       f"({', '.join(sorted(parsed.query))}); give the file alone")
    if parsed.get_backend_name() == "sqlite" and (not parsed.database or parsed.database == ":memory:"):
        raise BadInput(f"database '{redact(url)}' is in memory: its results would vanish when kvbench exits; "
                       "give a file, e.g. sqlite:///results/kvbench.sqlite")
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


QUICK_CHECK_MAX_BYTES = 64 << 20  # integrity-checked on opening up to this size (~0.3 s); larger: too slow


def check_sqlite_file(path: Path, shown: str) -> bool:
    """True when `path` holds a kvbench database, False when there is none yet (absent or empty);
    `BadInput` for anything else, found without writing a byte to it. A file up to
    QUICK_CHECK_MAX_BYTES (and one with no table) passes SQLite's quick_check first: a damaged page
    is refused before it is written around, and before a read would stop halfway, and the files
    SQLite made beside it for the check are removed."""
    try:
        if path.stat().st_size == 0:
            return False
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:  # a folder on the way the user may not enter (root's 0700 home)
        raise BadInput(f"database '{shown}' cannot be reached ({exc.strerror}): this command needs search "
                       f"access to every folder above it") from None
    if path.is_dir():
        raise BadInput(f"database '{shown}' is a directory, not a file")
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:  # not the user's to read (mode 000, another user's 0600 file)
        raise BadInput(f"database '{shown}' cannot be read ({exc.strerror}): this command needs read access "
                       "to it") from None
    if head != SQLITE_MAGIC:
        raise BadInput(f"database '{shown}' is not an SQLite file (it starts with {head[:8]!r}): "
                       "kvbench leaves it as it is; give another path")
    sidecars = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    had = [p.exists() for p in sidecars]
    if not os.access(path.parent, os.W_OK) and sidecars[0].exists() and sidecars[0].stat().st_size:
        raise BadInput(f"database '{shown}' has results in its write-ahead log ({sidecars[0].name}) that SQLite "
                       "cannot read where the folder is read-only: open it once with write access, or copy "
                       "it together with that file to a writable folder")
    try:
        con = sqlite3.connect(read_only_uri(path), uri=True, timeout=30)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables or path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
                verdict = con.execute("PRAGMA quick_check(1)").fetchone()[0]
                if verdict != "ok":  # "*** in database main ***\nPage 3: btreeInitPage() returns error code 11"
                    raise sqlite3.DatabaseError("; ".join(x for x in verdict.splitlines() if "***" not in x))
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        for sidecar, existed in zip(sidecars, had, strict=True):  # leave the refused file as it was found
            if not existed and sidecar.exists():
                sidecar.unlink(missing_ok=True)
        if "disk i/o error" in str(exc).lower():  # the file may be fine: its folder has no room for -wal/-shm
            full = os.statvfs(path.parent).f_bavail == 0
            raise BadInput(f"database '{shown}' cannot be opened: "
                           + ("the filesystem holding it is full; free some space" if full else f"{exc}")) from None
        raise BadInput(f"database '{shown}' is a damaged SQLite file ({exc}): kvbench leaves it as it is") from None
    if not tables:
        return False  # SQLite's header but no table yet: a database being created, by kvbench or just now
    if "kvbench_meta" not in tables:  # kvbench makes that table first, so this is someone else's file
        for sidecar, existed in zip(sidecars, had, strict=True):
            if not existed and sidecar.exists() and sidecar.stat().st_size == 0:
                sidecar.unlink(missing_ok=True)
        raise BadInput(f"database '{shown}' is another program's SQLite file (no kvbench_meta table): "
                       "kvbench leaves it as it is; give another path")
    return True


# How long a statement waits for a lock another session holds (the schema's advisory lock, a run's row)
# before it fails: SQLite's busy timeout, and PostgreSQL's lock_timeout where the server or the URL
# set none (PostgreSQL's default, 0, waits for ever: a kvbench stopped while it held the schema lock,
# or a session a partition left open on the server, held every later kvbench of the fleet).
LOCK_WAIT_S = 60.0


def _postgres_lock_wait(dbapi_connection, _record) -> None:
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True  # a SET inside a transaction that is rolled back would not last
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, false) WHERE current_setting('lock_timeout') = '0'",
                           (f"{LOCK_WAIT_S * 1000:.0f}ms",))
    finally:
        dbapi_connection.autocommit = autocommit


def locked_out(exc: BaseException) -> bool:
    """True when `exc` is a lock wait that ran out (SQLite: database is locked; PostgreSQL: lock_timeout)."""
    text = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in text or "lock timeout" in text


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# A PostgreSQL server with every connection slot taken answers at once; a fleet's writers that start
# together wait for a slot (up to a minute) rather than lose their run.
_SERVER_FULL = ("too many clients", "too many connections", "remaining connection slots")
SERVER_FULL_WAIT_S = 60.0


def _connect_waiting_for_a_slot(dialect, _record, cargs, cparams):
    deadline, pause = time.monotonic() + SERVER_FULL_WAIT_S, 0.05
    while True:
        try:
            return dialect.connect(*cargs, **cparams)
        except dialect.loaded_dbapi.OperationalError as exc:
            if not any(s in str(exc).lower() for s in _SERVER_FULL) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(pause, 2 * pause))
            pause = min(2 * pause, 2.0)


def open_store(url: str | None = None, read_only: bool = False, existing: bool = False):
    """Connect, check, and (unless `read_only`) create or migrate the schema. `existing`: the database
    must already hold kvbench's schema (a command that changes stored runs creates no database).
    `BadInput` on failure."""
    from kvbench.store.database import Store

    if url is not None and not url.strip():
        raise BadInput("empty database URL: give one, e.g. --db sqlite:///results/kvbench.sqlite, or leave --db out")
    url = url or default_url()
    parsed = parse_url(url)
    shown = redact(url)
    backend = parsed.get_backend_name()
    connect_args: dict[str, Any] = {}
    created: Path | None = None  # the SQLite file this call is about to make
    made: list[Path] = []  # and the folders it makes for it
    if backend == "sqlite" and parsed.database and parsed.database != ":memory:":
        path = Path(parsed.database)
        exists = check_sqlite_file(path, shown)
        if not read_only and not path.exists():
            created = path
        if exists and not read_only:  # a newer kvbench's file: refused before any pragma touches it
            migrate.refuse_newer(migrate.file_version(path, shown), shown)
        if read_only or existing:
            if not exists:
                raise BadInput(f"no kvbench database at '{shown}' (run 'kvbench run' first, or give --db)")
        if read_only:
            if migrate.file_version(path, shown) < schema.SCHEMA_VERSION and os.access(path, os.W_OK):
                open_store(url).dispose()  # an older kvbench's database: upgraded in place once, then read
            # mode=ro reads a live database; immutable=1 one on a read-only mount, where no -shm can be made
            query = {"mode": "ro", "uri": "true", **({} if os.access(path.parent, os.W_OK) else {"immutable": "1"})}
            parsed = parsed.set(database=f"file:{path.resolve()}", query=query)
        else:
            made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]  # removed if creation fails
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadInput(f"cannot create the database folder for '{shown}': {exc.strerror}") from None
    if backend == "sqlite":
        connect_args["timeout"] = LOCK_WAIT_S
    elif backend == "postgresql":
        connect_args["connect_timeout"] = 5
    try:
        # a pooled PostgreSQL connection the server dropped (restart, idle_session_timeout) is replaced before use
        engine = sa.create_engine(parsed, connect_args=connect_args,
                                  pool_pre_ping=backend == "postgresql")
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise BadInput(f"database URL '{shown}' needs a driver that is not installed: {exc}") from None
    except ArgumentError as exc:  # sqlite://name.sqlite: the path needs a third slash
        raise BadInput(f"bad database URL '{shown}' ({exc}): a file is sqlite:///relative/path.sqlite or "
                       "sqlite:////absolute/path.sqlite") from None
    if backend == "sqlite" and not read_only:
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    if backend == "postgresql":
        sa.event.listen(engine, "do_connect", _connect_waiting_for_a_slot)
        sa.event.listen(engine, "connect", _postgres_lock_wait)
    store = Store(engine, shown, read_only)
    try:
        if read_only:
            migrate.check_version(engine, shown)
        else:
            if existing:
                migrate.check_version(engine, shown, upgradable=True)
            _with_retries(lambda: migrate.ensure_schema(engine, shown))
    except DBAPIError as exc:
        engine.dispose()
        no_room = any(w in str(exc).lower() for w in ("disk i/o error", "database or disk is full", "no space"))
        if created is not None and no_room:  # a database that could not be made for want of room leaves nothing
            full = os.statvfs(created.parent).f_bavail == 0
            for leftover in (created, created.with_name(created.name + "-wal"), created.with_name(created.name + "-shm")):
                leftover.unlink(missing_ok=True)
            for folder in made:  # innermost first
                with contextlib.suppress(OSError):
                    folder.rmdir()
            if full:
                raise BadInput(f"cannot create database '{shown}': the filesystem holding it is full") from None
        if locked_out(exc):
            raise BadInput(f"database '{shown}' stayed locked by another session for {LOCK_WAIT_S:g} s (another "
                           f"kvbench making or upgrading its schema, stopped or hung?): try again once it is free") \
                from None
        if "readonly database" in str(exc).lower():  # a file this user may read but not write
            raise BadInput(f"the database '{shown}' refused the change ({redact(_one_line(exc))}): this command "
                           "needs write access to it") from None
        if any(w in str(exc).lower() for w in ("permission denied", "insufficientprivilege")):  # reached, refused
            reading = read_only or str(getattr(exc, "statement", "") or "").lstrip().upper().startswith("SELECT")
            raise BadInput(f"the database '{shown}' refused the query ({redact(_one_line(exc))}): this command needs "
                           f"{'read' if reading else 'write'} access to it") from None
        raise BadInput(f"cannot reach database '{shown}': {redact(_one_line(exc))}") from None
    if backend == "sqlite" and not read_only:
        store.file = FileIdentity(Path(parsed.database))  # a later write checks the path still names this file
        store.file.shown = shown
        try:
            store.file.check(shown)  # deleted while its schema was made: SQLite would write on into the unlinked file
        except BadInput:
            engine.dispose()
            raise
    return store


def _with_retries(step, attempts: int = 30) -> None:
    """`step`, again after a short random pause when another process won a race for the same
    schema object (SQLite: locked, already exists; PostgreSQL: duplicate type or table)."""
    for attempt in range(attempts):
        try:
            step()
            return
        except DBAPIError as exc:
            text = str(exc.orig).lower()
            racing = any(s in text for s in ("already exists", "locked", "duplicate", "unique constraint"))
            if not racing or attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0.01, 0.1) * (attempt + 1))
