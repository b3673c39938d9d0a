"""A run ends in a known state, whatever ends it: a signal, SIGKILL or the OOM killer, a database
that fills up. Real processes, real signals; the runs a test only starts from are the session's stored
ones (`stored_runs`), and commands that only read them back run in this process (`cli`)."""

import json
import os
import resource
import signal
import subprocess
import sys
import time

import sqlalchemy as sa

from tests.conftest import REPO, run_cli
from tests.inproc import run_in_process as cli

STORAGE = ["--bench", "storage.read", "--set", "file_size=64MiB", "--set", "io_size=1MiB", "--set", "batch=8",
           "--set", "files=4", "--samples", "50"]
# for a run the test ends with a signal: sampled for minutes, so it is still measuring when the signal comes
# however long a starved test process took to see its files (50 samples can end before it looks again)
UNTIL_STOPPED = ("--samples", "10000")


def _start(db: str, workdir, *args):
    return subprocess.Popen([sys.executable, "-m", "kvbench", "run", *args, "--set", f"path={workdir}", "--db", db],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_files(workdir, proc, timeout=300) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the run ended ({proc.returncode}) before its files were made: {proc.stderr.read()}")
        names = [n for n in os.listdir(workdir) if n.startswith("kvbench-")]
        if len(names) == 4:
            time.sleep(0.5)  # into the measurement
            return names
        time.sleep(0.05)
    raise AssertionError("the storage case never made its files")


def _started(tmp_path, *args):
    """(process, its files' folder, database) of a storage run started with `args`, once its files exist."""
    work = tmp_path / "files"
    work.mkdir()
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    proc = _start(db, work, *STORAGE, *args)
    _wait_for_files(work, proc)
    return proc, work, db


def _run_row(db: str):
    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT status, reason FROM run ORDER BY id DESC")).first()
    finally:
        engine.dispose()


def test_sigterm_aborts_the_run_and_removes_its_temporary_files(tmp_path):
    proc, work, db = _started(tmp_path, *UNTIL_STOPPED)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert os.listdir(work) == []  # the 4 x 64 MiB test files are gone
    status, reason = _run_row(db)
    assert status == "aborted" and "SIGTERM" in reason


def test_a_run_killed_outright_is_marked_crashed_and_swept_by_the_next_kvbench(tmp_path):
    proc, work, db = _started(tmp_path, *UNTIL_STOPPED)
    proc.kill()  # SIGKILL: nothing runs in the process any more
    proc.communicate(timeout=60)
    assert len(os.listdir(work)) == 4 and _run_row(db)[0] == "running"
    assert run_cli("results", "--db", db).returncode == 2  # `latest` never takes the partial run
    again = run_cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", db)
    assert again.returncode == 0, again.stderr
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        first = conn.execute(sa.text("SELECT status, reason FROM run WHERE id = 1")).one()
    engine.dispose()
    assert first.status == "crashed" and f"process {proc.pid} is gone" in first.reason
    assert os.listdir(work) == []  # its files were swept


def test_latest_skips_a_partial_run_and_compare_gates_on_its_missing_cases(stored_runs):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    engine = sa.create_engine(db)
    with engine.begin() as conn:  # a second run that stopped after its first case
        conn.execute(sa.text("INSERT INTO run (host_id, context_id, started_at, status, kvbench_version, tags, "
                             "system_state, cases_planned, reason) SELECT host_id, context_id, started_at, "
                             "'aborted', kvbench_version, tags, system_state, 2, 'interrupted (SIGTERM)' FROM run"))
        conn.execute(sa.text("INSERT INTO result (run_id, bench, params, case_hash, verified, status, warnings, extra, "
                             "bytes_per_op, median_s, p10_s, p90_s, mean_s, stdev_s, min_s, max_s, gbps_median, "
                             "gbps_p10, gbps_p90) SELECT 2, bench, params, case_hash, verified, status, warnings, "
                             "extra, bytes_per_op, median_s, p10_s, p90_s, mean_s, stdev_s, min_s, max_s, "
                             "gbps_median, gbps_p10, gbps_p90 FROM result WHERE id = 1"))
    engine.dispose()
    doc = json.loads(cli("results", "latest", "--format", "json", "--db", db).stdout)
    assert doc["run"]["id"] == 1 and doc["run"]["partial"] is None
    compared = cli("compare", "1", "2", "--db", db)
    assert compared.returncode == 1 and "1 case(s) of run 1 missing from run 2" in compared.stderr
    assert "run 2 is partial: aborted (interrupted (SIGTERM))" in compared.stderr


def test_a_database_that_fills_up_mid_run_is_one_line_and_the_run_is_marked_where_it_can_be(tmp_path, stored_runs):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    size = sum(p.stat().st_size for p in tmp_path.iterdir())

    def limit():  # the files may not grow: SQLite's next page write fails (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 4096, size + 4096))

    proc = subprocess.run([sys.executable, "-m", "kvbench", "run", "--suite", "quick", "--db", db], cwd=REPO,
                          capture_output=True, text=True, timeout=600, preexec_fn=limit)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    line = [x for x in proc.stderr.splitlines() if x.startswith("kvbench:")]
    assert len(line) == 1 and "cannot write to database" in line[0], proc.stderr[-2000:]
