"""Nothing lost under faults, with real processes (issue 26 items 2, 4, 5, 6; issue 29 item 7): a
database deleted under a run, a live run in another pid namespace beside this one, a run whose
heartbeat stopped, a host merged while its run runs, a crosscheck ended by SIGTERM."""

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from kvbench.store import open_store, schema
from tests.conftest import REPO, run_cli
from tests.test_run_lifecycle import STORAGE, _started, _wait_for_files


def test_a_database_deleted_mid_run_fails_loudly(tmp_path):
    proc, _work, _db = _started(tmp_path)
    for name in os.listdir(tmp_path):
        if name.startswith("k.sqlite"):
            os.unlink(tmp_path / name)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("kvbench:")]
    assert "k.sqlite' was moved or deleted while kvbench had it open" in line and "run 1 ended there" in line
    assert not (tmp_path / "k.sqlite").exists()  # no fresh, empty database made behind the user's back


def _in_own_pid_namespace(db: str, work) -> subprocess.Popen:
    """A storage run as a container runs it: its own pid namespace, this hostname; sampled for minutes
    (the test ends it with SIGTERM), so it is still running however fast an idle box finishes the rest."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-p", "--fork", "--mount-proc", "true"],
                                                         capture_output=True).returncode != 0:
        pytest.skip("unshare cannot make a pid namespace here (needs root or user namespaces)")
    return subprocess.Popen(["unshare", "-p", "--fork", "--mount-proc", sys.executable, "-m", "kvbench", "run",
                             *STORAGE, "--samples", "10000", "--set", f"path={work}", "--db", db], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _children(pid: int) -> list[int]:
    return [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]


def test_a_live_run_in_another_pid_namespace_with_this_hostname_is_left_running(tmp_path):
    work = tmp_path / "files"
    work.mkdir()
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    container = _in_own_pid_namespace(db, work)
    _wait_for_files(work, container)
    try:
        beside = run_cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", db)  # reaps as it begins
        assert beside.returncode == 0, beside.stderr
        assert _run_row_of(db, 1) == ("running", None)  # its pid (1 in its namespace) means nothing here
    finally:
        for child in _children(container.pid):  # the kvbench inside: SIGTERM ends its run
            os.kill(child, signal.SIGTERM)
        container.communicate(timeout=120)
    assert _run_row_of(db, 1)[0] == "aborted"


def _run_row_of(db: str, run_id: int):
    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            return tuple(conn.execute(sa.text("SELECT status, reason FROM run WHERE id = :id"), {"id": run_id}).one())
    finally:
        engine.dispose()


def _foreign_run(store, host: str, heartbeat_age_s: float) -> int:
    """A running run of another container (another pid namespace) whose heartbeat is this old."""
    store.ensure_host(host, "box", {"cpu": "x"})
    store.ensure_context("c" * 64, {})
    run_id = store.begin_run(host_id=host, context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                             git_sha=None, git_dirty=None, tags={}, system_state={"pid_namespace": "pid:[1]"},
                             cases_planned=1, owner={"pid": 1, "boot_id": "another-boot", "machine": "elsewhere"})
    with store.engine.begin() as conn:
        conn.execute(schema.run.update().where(schema.run.c.id == run_id).values(
            heartbeat_at=datetime.now(UTC) - timedelta(seconds=heartbeat_age_s)))
    return run_id


def test_tag_and_host_merge_crash_a_run_whose_heartbeat_stopped_and_merge_refuses_a_live_one(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store = open_store(db)
    silent = _foreign_run(store, "o" * 64, 3600)
    live = _foreign_run(store, "l" * 64, 0)
    tagged = run_cli("tag", str(live), "note", "x", "--db", db)
    assert tagged.returncode == 0, tagged.stderr
    status, reason = _run_row_of(db, silent)
    assert status == "crashed" and "no heartbeat for 60 min" in reason
    assert _run_row_of(db, live)[0] == "running"  # a fresh heartbeat: alive somewhere else
    refused = run_cli("host", "merge", "l" * 64, "--db", db)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"has run(s) {live} still running" in refused.stderr.strip().splitlines()[-1]
    merged = run_cli("host", "merge", "o" * 64, "--db", db)
    assert merged.returncode == 0, merged.stderr  # its crashed run moves with it


@pytest.mark.parametrize("phase", ["kvbench-", "kvbench-fio-"])
def test_sigterm_during_crosscheck_storage_leaves_no_file(tmp_path, phase):
    if phase == "kvbench-fio-" and shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    # A starved test process can see the phase's file and then not run again until the crosscheck has
    # ended on its own (the CI box, busy, once did): the signal then never reached a running crosscheck.
    # That says nothing of kvbench, so the scenario is tried again (at most 3 times), never judged.
    for _attempt in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "kvbench", "crosscheck", "storage", "--path", str(tmp_path),
                                 "--file-size", "64MiB", "--depth", "8"], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not any(n.startswith(phase) and (phase == "kvbench-fio-") == n.startswith("kvbench-fio-")
                      for n in os.listdir(tmp_path)):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()  # one still running past the deadline: its output then, not after it ends
                pytest.fail(f"the crosscheck never reached {phase}*: {proc.communicate(timeout=60)[1]}")
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        finished_first = proc.returncode in (0, 1, 3) and "interrupted" not in stderr and stderr.strip().splitlines()[
            -1].split(":")[0] in ("PASS", "FAIL", "INCOMPLETE")
        if not finished_first:
            break
        assert os.listdir(tmp_path) == []  # it ended on its own: its files are gone all the same
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "crosscheck interrupted (SIGTERM)" in stderr
    assert os.listdir(tmp_path) == []
