"""Signals that end a run, and the one that must not: a SIGHUP `nohup` set to be ignored (hostile
trial H19: kvbench replaced nohup's SIG_IGN, so closing the session aborted a run started to outlive
it)."""

from __future__ import annotations

import signal

import pytest

from kvbench.run.interrupts import Interrupted, signals_end_runs


def test_a_sighup_ignored_by_nohup_stays_ignored_and_sigterm_still_ends_the_run():
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what `nohup kvbench run …` starts with
    try:
        with signals_end_runs():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            signal.raise_signal(signal.SIGHUP)  # the session closing: nothing happens
            with pytest.raises(Interrupted) as ended:
                signal.raise_signal(signal.SIGTERM)
            assert ended.value.exit_code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_sighup_not_ignored_ends_the_run():
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with signals_end_runs(), pytest.raises(Interrupted) as ended:
            signal.raise_signal(signal.SIGHUP)
        assert ended.value.exit_code == 128 + signal.SIGHUP
    finally:
        signal.signal(signal.SIGHUP, before)


def test_processes_the_tests_start_take_sigint_even_when_the_test_run_was_started_in_the_background():
    """tests/conftest.py undoes the SIGINT a background job inherits ignored; without that, the tests
    that send a kvbench run SIGINT saw it ignored and the run go on to its end."""
    import subprocess
    import sys

    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60).stdout.strip() == "False"
