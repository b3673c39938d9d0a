"""tests/inproc.py, the in-process `kvbench` the CLI tests use: it answers as a real process does, and
what a command changes in the test process (environment, signal handlers, working directory, argv,
the consoles' settings) does not outlive the call."""

import json
import os
import signal
import sys

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.inproc import run_in_process

QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")


@pytest.mark.parametrize("args,env", [
    (["results", QUICK, "--format", "csv"], {}),  # CSV's \r\n, as a pipe read as text gives it
    (["results", QUICK], {"COLUMNS": "80"}),  # a table as wide as COLUMNS says
    (["compare", QUICK, QUICK, "--format", "markdown"], {}),
    (["run", "--bench", "dram.cpy"], {}),  # a one-line error, exit 2
])
def test_in_process_answers_as_a_kvbench_process_does(args, env):
    real, here = run_cli(*args, env=env), run_in_process(*args, env=env)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr)


def test_nothing_a_command_changes_outlives_the_call(tmp_path, monkeypatch):
    from kvbench.cli import common
    from kvbench.hardware.peaks import PEAKS_ENV

    monkeypatch.delenv(PEAKS_ENV, raising=False)
    monkeypatch.setenv("KVBENCH_TEST_KEPT", "before")
    peaks = tmp_path / "peaks.toml"
    peaks.write_text('[dram]\ngbps = 102.4\nsource = "the VM host\'s spec sheet"\n')
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    widths = [(c._width, c._color_system) for c in (common.out, common.err)]
    monkeypatch.chdir(tmp_path)  # a command runs from the repository's root, wherever the test is
    cwd, argv = os.getcwd(), list(sys.argv)

    done = run_in_process("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--peaks",
                          str(peaks), "--db", f"sqlite:///{tmp_path / 'k.sqlite'}",
                          env={"KVBENCH_TEST_KEPT": "during", "KVBENCH_TEST_ADDED": "1"})
    assert done.returncode == 0, done.stderr
    stored = run_in_process("results", "--format", "json", "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert "your peaks file" in json.loads(stored.stdout)["results"][0]["peak_source"]
    assert PEAKS_ENV not in os.environ  # --peaks set it for the command's process only
    assert os.environ["KVBENCH_TEST_KEPT"] == "before" and "KVBENCH_TEST_ADDED" not in os.environ
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert os.getcwd() == cwd and sys.argv == argv
    assert [(c._width, c._color_system) for c in (common.out, common.err)] == widths


def test_a_command_leaves_no_database_connection_open(pg_url):
    """As a process's exit would: PostgreSQL connections left idle in the test process would pile up."""
    import time

    import sqlalchemy as sa

    from kvbench.store import open_store

    open_store(pg_url).dispose()  # a database with no runs in it
    admin = sa.create_engine(pg_url)

    def others() -> int:
        with admin.connect() as conn:
            return conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                        "AND pid <> pg_backend_pid()")).scalar()

    try:
        before = others()
        for _ in range(3):
            assert "holds no runs yet" in run_in_process("results", "latest", "--db", pg_url).stderr
        deadline = time.monotonic() + 60  # a closed connection's server process ends a moment later
        while others() > before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert others() <= before
    finally:
        admin.dispose()
