"""Telling a dead run from a live one, and sweeping what a dead one left (the process-level story is
in test_run_lifecycle.py)."""

import os
import subprocess
import sys

import pytest

from kvbench.lifecycle import gone, sweep_temp_files

ME = {"pid": 100, "boot_id": "boot-a", "machine": "node1", "pid_namespace": "pid:[1]"}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no such process now (pids are not reused this quickly)


@pytest.mark.parametrize("machine,host_id,namespace,dead", [
    ("node1", "other", "pid:[9]", True),     # this hostname: its pid is checked
    ("old-name", "mine", "pid:[1]", True),   # renamed since, same box and pid namespace
    ("old-name", "mine", "pid:[9]", False),  # a container beside this one: its pids are not ours to check
    ("node2", "other", "pid:[1]", False),    # another box
])
def test_a_run_is_judged_only_where_its_pid_means_something(machine, host_id, namespace, dead):
    run = {"pid": _dead_pid(), "boot_id": "boot-a", "machine": machine, "host_id": host_id,
           "system_state": {"pid_namespace": namespace}}
    why = gone(run, ME, ["mine"])
    assert (why is not None) == dead
    if dead:
        assert f"process {run['pid']} is gone" in why


def test_a_reboot_ends_every_run_of_this_machine():
    run = {"pid": os.getpid(), "boot_id": "boot-old", "machine": "node1", "host_id": "x", "system_state": {}}
    assert "rebooted" in gone(run, ME)


def test_the_sweep_takes_a_dead_run_s_files_and_its_peers_logs_only(tmp_path):
    names = ["kvbench-41-0-a.dat", "kvbench-ucx-41.log", "kvbench-ucx-41-77.log", "kvbench-42-0-b.dat",
             "kvbench-ucx-42-43.log", "notes.txt"]
    for name in names:
        (tmp_path / name).write_text("x")
    removed = sweep_temp_files({str(tmp_path)}, {41})
    assert sorted(os.path.basename(p) for p in removed) == ["kvbench-41-0-a.dat", "kvbench-ucx-41-77.log",
                                                            "kvbench-ucx-41.log"]
    assert sorted(os.listdir(tmp_path)) == ["kvbench-42-0-b.dat", "kvbench-ucx-42-43.log", "notes.txt"]
