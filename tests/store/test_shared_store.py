"""A store many writers share, and files that are not kvbench's: with real processes, on SQLite and
on a real PostgreSQL."""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import open_store, redact
from tests.conftest import REPO, run_cli, worker_role

WRITER = """
import sys
from kvbench.store import open_store
store = open_store(sys.argv[1])
store.ensure_host("h" * 64, "box", {"cpu": "x"})
store.ensure_context("c" * 64, {"numpy": "2"})
run = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite="race", suite_hash=None, kvbench_version="0",
                      git_sha=None, git_dirty=None, tags={}, system_state={}, cases_planned=1)
store.add_result(run, {"bench": "dram.copy", "params": {}, "case_hash": "c", "verified": True, "status": "ok",
                       "warnings": [], "extra": {}}, [1e-3] * 5)
store.finish_run(run, "complete")
"""


def test_eight_processes_starting_on_one_fresh_database_all_succeed(db_url):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db_url], cwd=REPO, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    failures = [p.communicate(timeout=120)[1] for p in procs if p.wait(timeout=120) != 0]
    assert not failures, failures[0]
    store = open_store(db_url, read_only=True)
    with store.engine.connect() as conn:
        runs = conn.execute(sa.text("SELECT count(*) FROM run WHERE status = 'complete'")).scalar()
        hosts = conn.execute(sa.text("SELECT count(*) FROM host")).scalar()
        versions = conn.execute(sa.text("SELECT count(*) FROM kvbench_meta")).scalar()
    assert (runs, hosts, versions) == (8, 1, 1)


def test_a_version_read_before_another_writer_made_the_schema_and_stored_a_run_is_read_again(db_url):
    """The race behind a CI failure of the test above: one writer read "no schema version" (the file
    was still empty), then another made the schema and stored a run before the first looked for runs.
    Runs without a version row would mean the row was deleted; here it was written first, so the
    opening reads it again and goes on instead of calling the database changed outside kvbench."""
    from kvbench.store import migrate
    from tests.store.test_database import _begin

    store = open_store(db_url)
    store.finish_run(_begin(store), "complete")
    with store.engine.connect() as conn:
        assert migrate._changed_outside(conn, None, "db") == migrate.schema.SCHEMA_VERSION
    store.dispose()


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("content,message", [  # ids of their own: each xdist worker draws other bytes
    pytest.param(os.urandom(4096), "is not an SQLite file", id="random-bytes"),
    pytest.param(b"SQLite format 3\x00" + os.urandom(4080), "damaged SQLite file", id="sqlite-header-then-random"),
    pytest.param(None, "another program's SQLite file", id="another-program-s-sqlite-file"),
])
def test_a_file_that_is_not_a_kvbench_database_is_refused_and_left_unchanged(tmp_path, content, message):
    path = tmp_path / "theirs.sqlite"
    if content is None:
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        con.commit()
        con.close()
    else:
        path.write_bytes(content)
    before = _digest(path)
    for args in (["run", "--suite", "tests/fixtures/tiny.toml"], ["results"], ["tag", "1", "x"]):
        proc = run_cli(*args, "--db", f"sqlite:///{path}")
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert _digest(path) == before and sorted(os.listdir(tmp_path)) == ["theirs.sqlite"]


def test_read_only_commands_create_no_database_nor_its_folder(tmp_path):
    url = f"sqlite:///{tmp_path / 'nowhere' / 'k.sqlite'}"
    for args in (["results"], ["report", "-o", str(tmp_path / "r.html")], ["history", "dram.copy"], ["fleet"],
                 ["plan", "--model", "Llama-3.1-8B", "--tokens", "16"], ["compare", "1", "2"], ["export"], ["fit"]):
        proc = run_cli(*args, "--db", url)
        assert proc.returncode == 2 and "no kvbench database at" in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "nowhere").exists()


def test_a_database_on_a_read_only_mount_is_read(tmp_path):
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    data = tmp_path / "data"
    data.mkdir()
    url = f"sqlite:///{data / 'k.sqlite'}"
    assert run_cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", url).returncode == 0
    script = (f"mount --bind {data} {data} && mount -o remount,bind,ro {data} && "
              f"{sys.executable} -m kvbench results --format json --db {url}")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    if "Operation not permitted" in proc.stderr or "permission denied" in proc.stderr.lower():
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()[:100]}")
    assert proc.returncode == 0, proc.stderr
    assert '"status": "ok"' in proc.stdout


def test_an_older_kvbench_s_database_is_upgraded_in_place_and_keeps_its_runs(tmp_path):
    """A version 1 database (as an older kvbench wrote it): its runs read back after the upgrade."""
    path = tmp_path / "old.sqlite"
    url = f"sqlite:///{path}"
    open_store(url).dispose()
    con = sqlite3.connect(path)  # make it what version 1 was: no run columns of version 2, no alias table
    con.executescript("""
        DROP TABLE host_alias;
        CREATE TABLE run1 AS SELECT id, host_id, context_id, started_at, ended_at, status, suite, suite_hash,
            kvbench_version, git_sha, git_dirty, reason, tags, system_state FROM run;
        DROP TABLE run; ALTER TABLE run1 RENAME TO run;
        UPDATE kvbench_meta SET value = '1';
        INSERT INTO host VALUES ('o' || hex(randomblob(31)), 'box', '{}', '2026-01-01 00:00:00');
        INSERT INTO context VALUES ('c', '{}');
        INSERT INTO run (id, host_id, context_id, started_at, status, kvbench_version, tags, system_state)
            SELECT 1, id, 'c', '2026-01-01 00:00:00', 'complete', '0.0', '{}', '{}' FROM host;
    """)
    con.commit()
    con.close()
    assert run_cli("results", "1", "--db", url).returncode == 0  # a read upgrades it, once
    store = open_store(url, read_only=True)
    assert store.resolve_run("latest") == 1 and store.run(1)["pid"] is None


@pytest.mark.parametrize("url,secret", [
    ("postgresql+psycopg://kv:s3cret@127.0.0.1:1/x", "s3cret"),
    ("postgresql+psycopg://kv:p@ss%40w0rd@127.0.0.1:1/x", "w0rd"),
    ("postgresql+psycopg://kv@127.0.0.1:1/x?password=hunter2", "hunter2"),
    ("postgresql://:s3cret@127.0.0.1:1/x", "s3cret"),  # no user name
    ("postgresql://u:x@127.0.0.1:1/x?%70assword=hunter2", "hunter2"),  # the key percent-encoded
    ("host=127.0.0.1 port=1 password=hunter2", "hunter2"),  # a libpq string, not a URL
])
def test_a_password_never_appears_in_any_output(url, secret):
    assert secret not in redact(url)
    for args in (["results"], ["run", "--bench", "dram.copy", "--set", "size=64KiB"], ["info", "--json", "-"]):
        proc = run_cli(*args, "--db", url)
        assert secret not in proc.stdout + proc.stderr, args
        if args[0] != "info":
            assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    with pytest.raises(BadInput) as caught:
        open_store(url)
    assert secret not in str(caught.value)


def test_a_writer_waits_for_a_free_postgresql_connection_slot_instead_of_failing(pg_url):
    # A role allowed one connection stands in for a server with every slot taken (a fleet starting at once).
    open_store(pg_url).dispose()  # the schema, owned by the test's own user
    admin = sa.create_engine(pg_url)
    role = worker_role("kvbench_one_slot")
    _drop_role(admin, role)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD 'one' CONNECTION LIMIT 1"))
        for grant in ("ALL ON ALL TABLES IN SCHEMA public", "ALL ON ALL SEQUENCES IN SCHEMA public",
                      "CREATE ON SCHEMA public"):
            conn.execute(sa.text(f"GRANT {grant} TO {role}"))
    url = sa.engine.make_url(pg_url).set(username=role, password="one")
    shown = url.render_as_string(hide_password=False)
    try:
        holder = sa.create_engine(url).connect()  # the only slot, released a moment later
        waiter = subprocess.Popen([sys.executable, "-c", WRITER, shown], cwd=REPO, stderr=subprocess.PIPE, text=True)
        try:
            holder.exec_driver_sql("SELECT pg_sleep(1)")
        finally:
            holder.close()
            holder.engine.dispose()
        assert waiter.wait(timeout=120) == 0, waiter.stderr.read()
        store = open_store(pg_url, read_only=True)
        assert [r["status"] for r in store.runs()] == ["complete"]
        store.dispose()
    finally:
        _drop_role(admin, role)
        admin.dispose()


def _drop_role(engine: sa.Engine, role: str) -> None:
    with engine.begin() as conn:
        if conn.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first():
            conn.execute(sa.text(f"REASSIGN OWNED BY {role} TO CURRENT_USER"))
            conn.execute(sa.text(f"DROP OWNED BY {role}"))
            conn.execute(sa.text(f"DROP ROLE {role}"))


def test_a_database_with_a_damaged_page_is_one_line_and_never_written(tmp_path):
    path = tmp_path / "k.sqlite"
    url = f"sqlite:///{path}"
    assert run_cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", url).returncode in (0, 3)
    with sqlite3.connect(path) as conn:  # the damage must land on the pages a reader reads, not under newer WAL copies
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = int.from_bytes(path.read_bytes()[16:18], "big")
    with path.open("r+b") as f:  # one b-tree page overwritten, as a failing disk or a bad copy leaves it
        f.seek(2 * page)
        f.write(b"\xff" * 8)
    before = _digest(path)
    for args in (["run", "--suite", "tests/fixtures/tiny.toml"], ["tag", "1", "x"], ["results"]):
        proc = run_cli(*args, "--db", url)
        assert proc.returncode == 2 and "damaged" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert _digest(path) == before


def test_a_postgresql_database_with_another_program_s_tables_is_left_as_it_is(pg_url):
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE run (id integer primary key, note text)"))
    try:
        proc = run_cli("run", "--bench", "dram.copy", "--set", "size=64KiB", "--db", pg_url)
        assert proc.returncode == 2 and "another program's tables (run)" in proc.stderr, proc.stderr
        assert sa.inspect(engine).get_table_names() == ["run"]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE run"))
        engine.dispose()


def test_a_lock_another_session_holds_fails_the_command_after_the_lock_wait_not_never(pg_url, monkeypatch):
    """PostgreSQL waits for a lock for ever by default (lock_timeout 0): a kvbench stopped while it held the
    schema lock, or a run's row, held every later kvbench. Now a lock is waited for LOCK_WAIT_S (SQLite's
    busy timeout), then the command fails in one line naming the wait."""
    from kvbench.store import connect
    from kvbench.store.migrate import PG_SCHEMA_LOCK
    from tests.inproc import run_in_process

    subprocess.run([sys.executable, "-c", WRITER, pg_url], cwd=REPO, check=True, timeout=300)  # run 1, complete
    monkeypatch.setattr(connect, "LOCK_WAIT_S", 1)
    holder = sa.create_engine(pg_url)
    try:
        with holder.begin() as conn:  # a writer making the schema, stopped
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_SCHEMA_LOCK})
            with pytest.raises(BadInput, match=r"database '.*' stayed locked by another session for 1 s "):
                open_store(pg_url)
        with holder.begin() as conn:  # a `kvbench tag` of run 1, stopped
            conn.execute(sa.text("UPDATE run SET status = status WHERE id = 1"))
            tagged = run_in_process("tag", "1", "k", "v", "--db", pg_url)
        assert tagged.returncode == 2
        assert tagged.stderr.startswith("kvbench: error: the database stayed locked by another session for 1 s (")
        assert len(tagged.stderr.strip().splitlines()) == 1 and "Traceback" not in tagged.stderr
    finally:
        holder.dispose()
