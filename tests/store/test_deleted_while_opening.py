"""An SQLite database deleted while kvbench opens it, or during a write (issue 26 item 4): the `-wal`
file appears as the schema is made, and a file deleted then used to pass every later check (its
identity, taken after, was "none" and stayed "none"), so the run stored its results in the unlinked
file and said "2 ok"; a file deleted during the run's final status write was not checked after it.
A file deleted after the last write's own check (while the tables print) is caught by the command's
last check, before its exit status. Deterministic: the deletion is made inside the opening (after the
schema), the first result's or the final write, or just after the final write, by a wrapped step in a
real `kvbench run` process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kvbench.errors import BadInput
from kvbench.store import migrate, open_store
from tests.conftest import REPO

_RUN_DELETING = """
import glob, os, sys
from kvbench.store import database, durable, migrate
db, when = sys.argv[1], sys.argv[2]
def delete():
    for name in glob.glob(db + "*"):  # the database, its -wal and -shm, as `rm f8.sqlite*` would
        os.unlink(name)
def after(step):
    def step_then_deleted(*args, **kwargs):
        done = step(*args, **kwargs)
        delete()
        return done
    return step_then_deleted
if when == "opening":
    migrate.ensure_schema = after(migrate.ensure_schema)
elif when == "first-result":  # inside the write, after the check before it
    database.Store._add_results = durable.retrying(after(database.Store._add_results.__wrapped__))
elif when == "final-status":
    database.Store.finish_run = durable.retrying(after(database.Store.finish_run.__wrapped__))
else:  # after the last write and its own check, before the tables print and the command ends
    database.Store.finish_run = after(database.Store.finish_run)
sys.argv = ["kvbench", "run", "--db", "sqlite:///" + db, "--suite", "tests/fixtures/tiny.toml", "--samples", "5"]
from kvbench.__main__ import main
main()
"""


@pytest.mark.parametrize("when", ["opening", "first-result", "final-status", "after-the-last-write"])
def test_a_run_whose_database_is_deleted_exits_2(tmp_path, when):
    db = tmp_path / "f8.sqlite"
    proc = subprocess.run([sys.executable, "-c", _RUN_DELETING, str(db), when], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    if when != "after-the-last-write":  # then the table was shown before the last check: its line comes last
        assert "2 ok" not in proc.stdout + proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("kvbench:")]
    assert line == proc.stderr.splitlines()[-1]
    assert "f8.sqlite' was moved or deleted while kvbench had it open" in line
    assert not [n for n in os.listdir(tmp_path) if n.startswith("f8.sqlite")]  # nothing made behind the user's back


def test_open_store_refuses_a_file_deleted_while_it_opened(tmp_path, monkeypatch):
    db = tmp_path / "k.sqlite"
    made = migrate.ensure_schema

    def made_then_deleted(engine, shown: str) -> None:
        made(engine, shown)
        db.unlink()

    monkeypatch.setattr(migrate, "ensure_schema", made_then_deleted)
    with pytest.raises(BadInput, match="was moved or deleted while kvbench had it open"):
        open_store(f"sqlite:///{db}")
