"""`kvbench run --repeat N`: N runs of one selection, each in a fresh process, so `compare` has the
case's between-run noise at once; a signal to the parent ends the running repeat as `aborted`."""

import os
import signal
import sqlite3
import time

import pytest
from rich.console import Console

from kvbench.errors import BadInput
from kvbench.run.suite_repeat import run_repeated
from kvbench.run.suite_run import RunRequest
from kvbench.store import open_store
from tests.conftest import run_cli
from tests.test_run_lifecycle import UNTIL_STOPPED, _started

SMALL = {"size": "1MiB"}


def _statuses(db: str) -> list[str]:
    return [r["status"] for r in sorted(open_store(db, read_only=True).runs(), key=lambda r: r["id"])]


def test_each_repeat_is_its_own_run_tagged_with_its_place(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    request = RunRequest(benches=("dram.copy",), overrides=SMALL, samples=5, db=db, tags={"purpose": "ci"})
    outcomes = run_repeated(request, 3, Console(stderr=True))
    assert [o.run_id for o in outcomes] == [1, 2, 3] and all(o.failed == 0 for o in outcomes)
    assert _statuses(db) == ["complete"] * 3
    assert [open_store(db).run(i)["tags"] for i in (1, 2, 3)] == [
        {"purpose": "ci", "repeat": f"{i}/3"} for i in (1, 2, 3)]


def test_the_cli_shows_the_spread_and_a_later_compare_weighs_changes_against_it(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    shown = run_cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--repeat", "3",
                    "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert "between-run spread" in shown.stdout and "runs 1, 2, 3" in shown.stdout
    assert [line for line in shown.stderr.splitlines() if "a fresh process" in line] == [
        f"repeat {i}/3: a fresh process" for i in (1, 2, 3)]
    again = run_cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--db", db)
    assert again.returncode == 0, again.stderr
    # a run measured under contention leaves the history (analyze/regress/compare.py): this test is about the
    # repeat's runs being that history, not about how busy this box is, so their records are cleared
    with sqlite3.connect(tmp_path / "k.sqlite") as conn:
        conn.execute("UPDATE result SET extra = json_set(extra, '$.contention.contended', json('[]'))")
    compared = run_cli("compare", "3", "4", "--db", db)
    assert "over 3 runs" in compared.stdout + compared.stderr  # runs 1-3 are run 4's history, not an assumption


def test_bad_input_is_refused_before_any_repeat_starts(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    with pytest.raises(BadInput, match="unknown benchmark"):
        run_repeated(RunRequest(benches=("dram.cpy",), db=db), 2, Console(stderr=True))
    with pytest.raises(BadInput, match="--repeat 0"):
        run_repeated(RunRequest(benches=("dram.copy",), db=db), 0, Console(stderr=True))
    assert not (tmp_path / "k.sqlite").exists()


def test_sigterm_to_the_parent_aborts_the_running_repeat_and_starts_no_other(tmp_path):
    proc, work, db = _started(tmp_path, "--repeat", "3", *UNTIL_STOPPED)
    proc.send_signal(signal.SIGTERM)  # the parent only, as `timeout` sends it
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "repeat 2/3" not in stderr and "run 1 is marked aborted" in stderr
    assert _statuses(db) == ["aborted"]
    assert os.listdir(work) == []  # the repeat removed its files as it ended


def _child_of(pid: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("no repeat process started")


def test_a_repeat_killed_outright_is_one_line_and_exit_1_and_its_run_marked_crashed(tmp_path):
    proc, work, db = _started(tmp_path, "--repeat", "2", *UNTIL_STOPPED)
    child = _child_of(proc.pid)
    os.kill(child, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert stderr.strip().splitlines()[-1] == ("kvbench: repeat 1/2: its process ended with signal SIGKILL; "
                                               "run 1 is marked crashed, its finished results kept, its files "
                                               "removed")
    assert os.listdir(work) == []
    assert "Traceback" not in stderr
    assert _statuses(db) == ["crashed"]  # by its parent, not left for some later kvbench
    assert f"its process {child} ended with signal SIGKILL" in open_store(db).run(1)["reason"]


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie nobody reaped yet: ended
    except FileNotFoundError:
        return True


def test_a_parent_killed_outright_takes_its_repeat_with_it_quietly(tmp_path):
    proc, work, db = _started(tmp_path, "--repeat", "2", *UNTIL_STOPPED)
    child = _child_of(proc.pid)
    proc.kill()  # SIGKILL: the parent can pass nothing on
    deadline = time.monotonic() + 120
    while not _ended(child):
        assert time.monotonic() < deadline, "the repeat outlived its parent"
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=60)  # the repeat wrote its progress to the same pipe
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert _statuses(db) == ["aborted"] and "SIGTERM" in open_store(db).run(1)["reason"]
    assert os.listdir(work) == []  # it removed its files as it ended


def test_a_signal_before_any_run_began_says_nothing_was_stored(monkeypatch, capsys):
    import typer

    import kvbench.run.suite_run
    from kvbench.cli.run import run_and_show
    from kvbench.run.interrupts import Interrupted

    def interrupted(request, progress):
        raise Interrupted(signal.SIGTERM)  # e.g. while the schema was being made: no run row yet

    monkeypatch.setattr(kvbench.run.suite_run, "run_suite", interrupted)
    with pytest.raises(typer.Exit) as ended:
        run_and_show(RunRequest(), None)
    assert ended.value.exit_code == 143
    assert "no run had begun, so nothing was stored" in capsys.readouterr().err
