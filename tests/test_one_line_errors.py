"""Faults a user meets outside kvbench's own checks — a database changed behind its back, one it may
not read, a full disk under stdout — are one line and exit 2, never a traceback. Most commands run in
this process (`cli`, tests/inproc.py); a real process where its file descriptors are the point (a full
disk as stdout) or where an input could block (a device, a pipe: a timeout bounds it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import open_store, schema
from kvbench.store.connect import check_sqlite_file
from tests.conftest import FIXTURES, run_cli
from tests.inproc import run_in_process as cli

EXPORT = str(FIXTURES / "runs" / "quick-cpu-vm.json")


def _one_line_error(proc, *words: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("kvbench: error: "), proc.stderr
    for word in words:
        assert word in lines[0]
    return lines[0]


@pytest.mark.parametrize("value", ["3.0", "", "abc"])
def test_a_schema_version_that_is_not_a_whole_number_is_one_line(db_url, value):
    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version").values(value=value))
    store.dispose()
    with pytest.raises(BadInput, match="not a whole number"):
        open_store(db_url)
    with pytest.raises(BadInput, match="not a whole number"):
        open_store(db_url, read_only=True)
    _one_line_error(cli("results", "--db", db_url), "schema version", repr(value))


def test_a_database_file_the_user_may_not_read_is_one_line(tmp_path, monkeypatch):
    db = tmp_path / "kvbench.sqlite"
    open_store(f"sqlite:///{db}").dispose()
    real_open = Path.open

    def refused(self, *args, **kwargs):  # root reads a mode-000 file, so the refusal is staged
        if self == db:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    with pytest.raises(BadInput, match="cannot be read .Permission denied.: this command needs read access"):
        check_sqlite_file(db, str(db))


@pytest.mark.parametrize("args", [["results", EXPORT, "--format", "json"], ["results", EXPORT],
                                  ["results", EXPORT, "--format", "csv"], ["export", EXPORT]])
def test_stdout_on_a_full_disk_is_one_line(args):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    import subprocess
    import sys

    from tests.conftest import REPO

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "kvbench", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300, cwd=REPO)
    _one_line_error(proc, "cannot write the output", "No space left on device")


def test_tables_dropped_behind_kvbench_meta_are_one_line(db_url):
    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE sample"))
        conn.execute(sa.text("DROP TABLE result"))
        conn.execute(sa.text("DROP TABLE replay"))  # its executed run refers to run (PostgreSQL refuses otherwise)
        conn.execute(sa.text("DROP TABLE run"))
    store.dispose()
    _one_line_error(cli("results", "--db", db_url, env={"KVBENCH_HOST_ID": "droppedbox"}),
                    "lacks a kvbench table")


@pytest.mark.parametrize("command", [["results", "latest"], ["tag", "1", "zz"]])
def test_a_column_dropped_behind_kvbench_meta_is_one_line(db_url, command):
    from tests.store.test_database import _begin

    store = open_store(db_url)
    store.finish_run(_begin(store), "complete")
    with store.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE run DROP COLUMN heartbeat_at"))
    store.dispose()
    line = _one_line_error(cli(*command, "--db", db_url, env={"KVBENCH_HOST_ID": "droppedbox"}),
                           "lacks a kvbench column")
    assert "heartbeat_at" in line


@pytest.mark.parametrize("command", [["run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5"],
                                     ["tag", "1", "zz"], ["results", "latest"]])
def test_a_table_dropped_is_refused_before_anything_is_measured_or_tagged(db_url, command):
    from tests.store.test_database import _begin

    store = open_store(db_url)
    store.finish_run(_begin(store), "complete")
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE sample"))
        conn.execute(sa.text("DROP TABLE result"))
    store.dispose()
    line = _one_line_error(cli(*command, "--db", db_url, env={"KVBENCH_HOST_ID": "droppedbox"}),
                           "lacks a kvbench table (result, sample)")
    assert "marked failed" not in line
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:  # no run begun, nothing tagged
        assert [tuple(r) for r in conn.execute(sa.text("SELECT status, tags FROM run"))] in (
            [("complete", '{"purpose": "test"}')], [("complete", {"purpose": "test"})])
    engine.dispose()


@pytest.mark.parametrize("command", [["run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5"],
                                     ["results", "latest"]])
def test_a_version_row_deleted_from_a_used_database_is_refused(db_url, command):
    from tests.store.test_database import _begin

    store = open_store(db_url)
    store.finish_run(_begin(store), "complete")
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM kvbench_meta"))
    store.dispose()
    _one_line_error(cli(*command, "--db", db_url, env={"KVBENCH_HOST_ID": "metabox"}),
                    "no schema_version in kvbench_meta although it holds kvbench tables", "changed outside kvbench")


@pytest.mark.parametrize("granted", ["kvbench_meta", None])  # None: hostile trial H22, not even the version
def test_select_revoked_says_read_access(pg_url, granted):
    from tests.conftest import worker_role
    from tests.store.test_shared_store import _drop_role

    open_store(pg_url).dispose()
    admin = sa.create_engine(pg_url)
    role = worker_role("kvbench_noread")
    _drop_role(admin, role)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-7x1'"))
        if granted:  # the version, nothing else
            conn.execute(sa.text(f"GRANT SELECT ON {granted} TO {role}"))
    url = sa.engine.make_url(pg_url).set(username=role, password="pw-7x1").render_as_string(False)
    try:
        line = _one_line_error(cli("results", "--db", url, env={"KVBENCH_HOST_ID": "noreadbox"}),
                               "needs read access")
        assert "write" not in line and "pw-7x1" not in line
    finally:
        _drop_role(admin, role)
        admin.dispose()


def test_version_loads_no_heavy_library():
    """`kvbench --version` answers without numpy, SQLAlchemy, pandas, seaborn or numba (each costs a
    tenth of a second or more to import), nor typer, rich or the command modules (another tenth on a
    busy box): checked by what it imports, not by timing it."""
    import subprocess
    import sys

    from tests.conftest import REPO

    probe = ("import sys; sys.argv = ['kvbench', '--version']\n"
             "from kvbench.__main__ import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} | {m for m in sys.modules if 'kvbench' in m})))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    version, loaded = proc.stdout.splitlines()
    assert version.startswith("kvbench ")
    heavy = {"numpy", "sqlalchemy", "pandas", "seaborn", "numba", "matplotlib", "pydantic", "scipy", "jinja2",
             "typer", "click", "rich", "kvbench.cli", "kvbench.hardware"}
    assert not heavy & set(loaded.split())


def test_a_symlink_loop_as_the_output_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    _one_line_error(cli("export", EXPORT, "-o", str(tmp_path / "a")), "--output", "loop of symbolic links")
    _one_line_error(cli("accept", "--run", EXPORT, "--json", str(tmp_path / "b")), "--json", "loop")


@pytest.mark.parametrize("kind", ["device", "fifo", "too-large"])
def test_user_files_are_regular_files_under_a_size_limit(tmp_path, kind):
    """`accept --rules /dev/zero` once read until the OOM killer came; a pipe would block forever."""
    import os

    from kvbench.analyze.accept.rules import load_rules
    from kvbench.analyze.runs import load_document
    from kvbench.input_files import EXPORT_MAX_BYTES, TEXT_MAX_BYTES
    from kvbench.kv.geometry import read_hf_config
    from kvbench.plan.suite import load_suite

    if kind == "device":
        path, message = Path("/dev/zero"), "not a regular file"
    elif kind == "fifo":
        path, message = tmp_path / "pipe.json", "not a regular file"
        os.mkfifo(path)
    else:
        path, message = tmp_path / "big.json", "larger than"
        with open(path, "wb") as f:
            f.truncate(EXPORT_MAX_BYTES + 1)  # sparse: nothing is written
    readers = [load_rules, read_hf_config, load_suite]
    if path.suffix == ".json":  # what names an export file (any other RUN is a run id or a name)
        readers.append(lambda p: load_document(str(p), None, None))
    for read in readers:
        with pytest.raises(BadInput, match=message):
            read(path if read is not load_suite else str(path))
    if kind == "too-large":
        with open(path, "r+b") as f:
            f.truncate(TEXT_MAX_BYTES + 1)
        with pytest.raises(BadInput, match="larger than 4 MiB"):
            load_rules(path)
    _one_line_error(run_cli("accept", "--run", EXPORT, "--rules", str(path), timeout=120), message)


@pytest.mark.parametrize("kind", ["fifo", "folder", "device", "typo"])
def test_a_run_that_is_a_path_but_no_regular_file_is_refused_by_its_type(tmp_path, kind):
    # hostile trial H10: a fifo, /dev/zero or a folder was "bad run …: give a run id, 'latest' or
    # 'baseline'", naming neither the JSON-file form nor what was wrong with the path
    import os

    ref = {"fifo": str(tmp_path / "f"), "folder": str(tmp_path), "device": "/dev/zero", "typo": "lastest"}[kind]
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    if kind == "fifo":
        os.mkfifo(ref)
    if kind == "typo":  # a database holding a run, so the reference itself is what is refused
        assert cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--db", db).returncode == 0
    proc = run_cli("results", ref, "--db", db)
    said = {"fifo": "is not a regular file", "folder": "is a folder, not a file",
            "device": "is not a regular file", "typo": "give a run id, 'latest', 'baseline' or a kvbench JSON file"}
    assert proc.returncode == 2 and said[kind] in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
