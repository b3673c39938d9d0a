"""Telling a dead run from a live one, and sweeping what a dead one left (the process-level story is
in test_run_lifecycle.py)."""

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kvbench.run.lifecycle import STALE_AFTER_S, gone, sweep_temp_files

ME = {"pid": 100, "boot_id": "boot-a", "machine": "node1", "pid_namespace": "pid:[1]"}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no such process now (pids are not reused this quickly)


@pytest.mark.parametrize("machine,boot,host_id,namespace,dead", [
    ("node1", "boot-a", "other", "pid:[1]", True),   # this boot and pid namespace: its pid is checked
    ("old-name", "boot-a", "mine", "pid:[1]", True),  # renamed since: the pid still means the same here
    # a container beside this one, even with this hostname: its pids are not ours to check (issue 29.7)
    ("node1", "boot-a", "mine", "pid:[9]", False),
    ("node1", "boot-a", "other", "pid:[9]", False),
    # another box named alike: the first pid namespace has one number on every box, the boot id differs
    ("node1", "boot-b", "other", "pid:[1]", False),
])
def test_a_run_is_judged_only_where_its_pid_means_something(machine, boot, host_id, namespace, dead):
    run = {"pid": _dead_pid(), "boot_id": boot, "machine": machine, "host_id": host_id,
           "system_state": {"pid_namespace": namespace}, "heartbeat_at": datetime.now(UTC)}
    why = gone(run, ME, ["mine"])
    assert (why is not None) == dead
    if dead:
        assert f"process {run['pid']} is gone" in why


@pytest.mark.parametrize("namespace,boot", [("pid:[9]", "boot-a"), ("pid:[1]", "boot-b")])
def test_a_run_elsewhere_is_crashed_by_its_silent_heartbeat_alone(namespace, boot):
    run = {"pid": os.getpid(), "boot_id": boot, "machine": "node1", "host_id": "other",
           "system_state": {"pid_namespace": namespace}}
    now = datetime.now(UTC)
    fresh = now - timedelta(seconds=STALE_AFTER_S / 2)
    assert gone({**run, "heartbeat_at": fresh}, ME, ["mine"], now=now) is None
    stale = now - timedelta(seconds=STALE_AFTER_S + 60)
    assert "no heartbeat for" in gone({**run, "heartbeat_at": stale}, ME, ["mine"], now=now)


def _live_kvbench() -> subprocess.Popen:
    """A process here whose command line names kvbench, as a container's fresh kvbench's does."""
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "kvbench"], stdin=subprocess.PIPE)
    deadline = time.monotonic() + 60  # bounds a hang only: the exec must show in cmdline first
    while b"kvbench" not in open(f"/proc/{live.pid}/cmdline", "rb").read():
        assert live.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    return live


def test_a_silent_heartbeat_crashes_a_run_whatever_its_pid_says():
    """Issue 43.6: fresh containers on one host reuse the pid-namespace id and start kvbench at the same
    small pid, so a SIGKILLed run's pid names a live kvbench (another container's, or the caller itself):
    after 33 min without a heartbeat it is crashed all the same. A run merely suspended past the limit
    gets its status back when it finishes (finish_run writes it)."""
    live = _live_kvbench()
    try:
        now = datetime.now(UTC)
        for pid in (live.pid, ME["pid"]):  # another live kvbench, and the caller's own pid
            run = {"pid": pid, "boot_id": "boot-a", "machine": "node1", "host_id": "mine",
                   "system_state": {"pid_namespace": "pid:[1]"}}
            stale = gone({**run, "heartbeat_at": now - timedelta(minutes=33)}, {**ME, "pid": ME["pid"]}, ["mine"],
                         now=now)
            assert stale is not None and "no heartbeat for 33 min" in stale, pid
            assert gone({**run, "heartbeat_at": now - timedelta(seconds=STALE_AFTER_S / 2)}, ME, ["mine"],
                        now=now) is None  # within the limit: a live pid is taken at its word
    finally:
        live.communicate(b"", timeout=60)


def test_a_pid_that_now_names_another_process_is_gone_at_once():
    """Where the run recorded when its process started, a pid reused by a later process (a live kvbench,
    or the caller itself) is no proof of life even with a fresh heartbeat."""
    from kvbench.run.lifecycle import process_start

    live = _live_kvbench()
    try:
        now = datetime.now(UTC)
        run = {"boot_id": "boot-a", "machine": "node1", "host_id": "mine", "heartbeat_at": now}
        for pid, me in ((live.pid, ME), (os.getpid(), {**ME, "pid": os.getpid(), "pid_start": process_start()})):
            started = process_start(pid)
            same = {**run, "pid": pid, "system_state": {"pid_namespace": "pid:[1]", "pid_start": started}}
            assert gone(same, me, ["mine"], now=now) is None  # that very process: alive
            earlier = {**same, "system_state": {"pid_namespace": "pid:[1]", "pid_start": started - 1}}
            assert f"process {pid} is gone" in gone(earlier, me, ["mine"], now=now)
    finally:
        live.communicate(b"", timeout=60)


def test_reap_crashes_a_silent_run_that_holds_the_caller_s_own_pid(tmp_path):
    """End to end: the dead run's pid is this process's (a container restarted at the same pid)."""
    from kvbench.run.lifecycle import owner, pid_namespace, reap
    from kvbench.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'k.sqlite'}")
    store.ensure_host("h" * 64, "box", {"cpu": "x"})
    store.ensure_context("c" * 64, {"numpy": "2"})
    kept = tmp_path / f"kvbench-{os.getpid()}-0-a.dat"  # a file of this very process: never swept
    kept.write_text("x")
    run_id = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite="quick", suite_hash="abc",
                             kvbench_version="0.1", git_sha=None, git_dirty=None, tags={},
                             system_state={"temp_dirs": [str(tmp_path)], "pid_namespace": pid_namespace()},
                             owner=owner())
    assert reap(store, ["h" * 64]) == []  # its heartbeat is fresh: it may be this process's own run
    engine = store.engine
    import sqlalchemy as sa

    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE run SET heartbeat_at = :t"),
                     {"t": (datetime.now(UTC) - timedelta(minutes=33)).replace(tzinfo=None)})
    assert reap(store, ["h" * 64]) == [run_id]
    assert store.run(run_id)["status"] == "crashed" and "no heartbeat for 33 min" in store.run(run_id)["reason"]
    assert kept.exists()
    store.finish_run(run_id, "complete")  # a run that was only suspended gets its status back when it ends
    assert store.run(run_id)["status"] == "complete"
    store.dispose()


def test_a_reboot_ends_every_run_of_this_box():
    run = {"pid": os.getpid(), "boot_id": "boot-old", "machine": "node1", "host_id": "mine", "system_state": {}}
    assert "rebooted" in gone(run, ME, ["mine"])
    assert gone({**run, "host_id": "other"}, ME, ["mine"]) is None  # another box that shares the hostname


def test_the_sweep_takes_a_dead_run_s_files_and_its_peers_logs_only(tmp_path):
    names = ["kvbench-41-0-a.dat", "kvbench-ucx-41.log", "kvbench-ucx-41-77.log", "kvbench-42-0-b.dat",
             "kvbench-ucx-42-43.log", "notes.txt"]
    for name in names:
        (tmp_path / name).write_text("x")
    removed = sweep_temp_files({str(tmp_path)}, {41})
    assert sorted(os.path.basename(p) for p in removed) == ["kvbench-41-0-a.dat", "kvbench-ucx-41-77.log",
                                                            "kvbench-ucx-41.log"]
    assert sorted(os.listdir(tmp_path)) == ["kvbench-42-0-b.dat", "kvbench-ucx-42-43.log", "notes.txt"]


def test_the_heartbeat_beats_while_the_block_runs_and_stops_after(tmp_path):
    from kvbench.run.lifecycle import heartbeat
    from kvbench.store import open_store
    from tests.store.test_database import _begin

    store = open_store(f"sqlite:///{tmp_path / 'k.sqlite'}")
    run_id = _begin(store)
    first = store.run(run_id)["heartbeat_at"]
    deadline = time.monotonic() + 120  # bounds a hang only: a case that sends no result still beats
    with heartbeat(store, run_id, every_s=0.01):
        while store.run(run_id)["heartbeat_at"] == first:
            assert time.monotonic() < deadline, "no heartbeat while the block ran"
            time.sleep(0.01)
    store.finish_run(run_id, "complete")
    ended = store.run(run_id)["heartbeat_at"]
    time.sleep(0.1)
    assert store.run(run_id)["heartbeat_at"] == ended  # a finished run beats no more


def test_a_reboot_s_crashed_run_leaves_the_files_of_a_live_kvbench_that_now_holds_its_pid(tmp_path):
    """After a reboot a crashed run's pid may name another, live kvbench: its files stay."""
    from kvbench.run.lifecycle import owner, reap
    from kvbench.store import open_store

    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "kvbench"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # bounds a hang only: the exec must show in cmdline first
        while b"kvbench" not in Path(f"/proc/{live.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        kept = tmp_path / f"kvbench-{live.pid}-0-a.dat"
        kept.write_text("x")
        store = open_store(f"sqlite:///{tmp_path / 'k.sqlite'}")
        store.ensure_host("h" * 64, "box", {"cpu": "x"})
        store.ensure_context("c" * 64, {"numpy": "2"})
        run_id = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite="quick", suite_hash="abc",
                                 kvbench_version="0.1", git_sha=None, git_dirty=None, tags={},
                                 system_state={"temp_dirs": [str(tmp_path)]},
                                 owner={"pid": live.pid, "boot_id": "boot-before", "machine": owner()["machine"]})
        assert reap(store, ["h" * 64]) == [run_id]  # rebooted here: crashed
        assert kept.exists()
    finally:
        live.communicate(b"", timeout=60)
