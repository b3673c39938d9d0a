"""Opening a database: a URL that cannot hold results, or that names no database kvbench can
reach, is one line (exit 2) before anything is made; a database that could not be made leaves no
file behind; a read-only location that hides committed results says so instead of showing fewer.
Commands run in this process (`cli`, tests/inproc.py) except inside a mount namespace, where they are
real processes."""

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from kvbench.errors import BadInput
from kvbench.store import open_store
from tests.conftest import REPO
from tests.inproc import run_in_process as cli


@pytest.mark.parametrize("url, message", [
    ("sqlite://", "is in memory"),
    ("sqlite:///", "is in memory"),
    ("sqlite:///:memory:", "is in memory"),
    ("sqlite://relative.sqlite", "three slashes"),
    ("postgres://user:secret@127.0.0.1/db", "write postgresql://"),
    ("SQLITE:///k.sqlite", "write sqlite://"),
    ("sqlite:///k.sqlite?mode=ro", "SQLite URLs take no options"),
    ("  ", "empty database URL"),
])
def test_a_url_that_cannot_hold_results_is_refused_in_one_line(url, message):
    with pytest.raises(BadInput, match=message):
        open_store(url)
    proc = cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--db", url)
    assert proc.returncode == 2 and message in proc.stderr and "secret" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _in_mount_namespace(script: str) -> subprocess.CompletedProcess:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
    if "Operation not permitted" in proc.stderr or "permission denied" in proc.stderr.lower():
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()[:100]}")
    return proc


def test_a_database_that_cannot_be_made_for_want_of_room_leaves_no_file(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    url = f"sqlite:///{full / 'made' / 'for it' / 'k.sqlite'}"  # the folders it made go too
    proc = _in_mount_namespace(f"mount -t tmpfs -o size=8k tmpfs {full} && {sys.executable} -m kvbench run "
                               f"--bench dram.copy --set size=1MiB --samples 5 --db '{url}'; echo rc=$?; ls -A {full}")
    lines = proc.stdout.strip().splitlines()
    assert "rc=2" in lines and lines[-1] == "rc=2", proc.stdout  # and nothing listed after it
    assert "the filesystem holding it is full" in proc.stderr


def test_results_held_only_in_the_write_ahead_log_are_not_hidden_on_a_read_only_mount(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = data / "k.sqlite"
    url = f"sqlite:///{path}"
    assert cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", url).returncode == 0
    # a writer killed after its commit: the change is in k.sqlite-wal only
    subprocess.run([sys.executable, "-c", f"import os, sqlite3; c = sqlite3.connect({str(path)!r}); "
                    "c.execute('PRAGMA wal_autocheckpoint=0'); c.execute(\"UPDATE run SET suite='in-wal'\"); "
                    "c.commit(); os._exit(0)"], check=True)
    assert os.path.getsize(f"{path}-wal") > 0
    proc = _in_mount_namespace(f"mount --bind {data} {data} && mount -o remount,bind,ro {data} && "
                               f"{sys.executable} -m kvbench results --format json --db {url}; echo rc=$?; "
                               f"{sys.executable} -m kvbench tag 1 x --db {url}")
    assert "rc=2" in proc.stdout and "write-ahead log" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert cli("results", "--format", "json", "--db", url).stdout.count('"suite": "in-wal"') == 1


def test_a_damaged_file_in_wal_mode_is_refused_and_left_with_no_new_file_beside_it(tmp_path, stored_runs):
    path = tmp_path / "k.sqlite"
    assert stored_runs("tests/fixtures/tiny.toml", 1) == f"sqlite:///{path}"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    before = sorted(os.listdir(tmp_path))
    page = int.from_bytes(path.read_bytes()[16:18], "big")
    with path.open("r+b") as f:
        f.seek(2 * page)
        f.write(b"\xff" * 8)
    for args in (["results"], ["run", "--suite", "tests/fixtures/tiny.toml"]):
        proc = cli(*args, "--db", f"sqlite:///{path}")
        assert proc.returncode == 2 and "damaged" in proc.stderr
    assert sorted(os.listdir(tmp_path)) == before


def test_a_role_that_may_only_read_gets_one_line_when_it_tries_to_change_a_run(pg_url):
    import sqlalchemy as sa

    from tests.conftest import worker_role
    from tests.store.test_shared_store import _drop_role

    assert cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", pg_url).returncode == 0
    admin = sa.create_engine(pg_url)
    role = worker_role("kvbench_reader")
    _drop_role(admin, role)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD 'r3ader'"))
        conn.execute(sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    url = sa.engine.make_url(pg_url).set(username=role, password="r3ader").render_as_string(False)
    try:
        assert cli("results", "--db", url).returncode == 0  # reading is allowed
        for args in (["tag", "1", "baseline"], ["host", "merge", "x" * 64]):
            proc = cli(*args, "--db", url)
            assert proc.returncode == 2, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
            assert "r3ader" not in proc.stderr
    finally:
        _drop_role(admin, role)
        admin.dispose()
