"""`python -m kvbench.cluster.launch` as a launcher starts it, two ranks on this host (127.0.0.1; each rank's
target on --port plus its LOCAL_RANK): every wait bounded by --timeout, signals end a rank with one
line and 128 + N, nothing left in the temp folder.

Timeouts below only bound hangs; they are generous because the test box is shared and slow."""

import glob
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from tests.conftest import REPO, launch_port

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")


def launch(rank: int, port: int, *args: str, world: int = 2, local_rank: int | None = None,
           **popen) -> subprocess.Popen:
    # as a launcher starts it: without the UCX_LOG_FILE this test process was given when it loaded NIXL
    env = {**{k: v for k, v in os.environ.items() if k != "UCX_LOG_FILE"}, "MASTER_ADDR": "127.0.0.1",
           "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank if local_rank is None else local_rank)}
    return subprocess.Popen([sys.executable, "-m", "kvbench.cluster.launch", "--port", str(port), *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def ended(proc: subprocess.Popen, within_s: float) -> tuple[int, str]:
    """(status, stderr) of `proc`, killed if it outlives `within_s` seconds (a hang fails the test)."""
    try:
        _, err = proc.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"still running after {within_s:.0f} s: {err[-1500:]}")
    return proc.returncode, err


def ucx_logs_of(pid: int) -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), f"kvbench-ucx-{pid}-*.log"))


def wait_until(condition, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {within_s:.0f} s")
        time.sleep(0.2)


def test_a_block_size_mismatch_fails_both_ranks_cases_and_both_end(tmp_path):
    """Each rank measures the other's target: with different block sizes every case fails naming the
    bytes the target holds and the bytes it needs, and both ranks end (rank 0 used to wait 15
    minutes for a goodbye that never came)."""
    port, db = launch_port(), f"sqlite:///{tmp_path / 'k.sqlite'}"
    first = launch(0, port, "--block-size", "64KiB", "--batch", "8", "--timeout", "120", "--", "--bench",
                   "net.write", "--db", db)  # 120 s to join (a starved box); the mismatch ends both at once
    second = launch(1, port, "--block-size", "128KiB", "--batch", "8", "--timeout", "120", "--", "--bench",
                    "net.write", "--db", db)
    try:
        for proc, holds, needs in ((first, 8 * 131072, 8 * 65536), (second, 8 * 65536, 8 * 131072)):
            status, err = ended(proc, 400)
            assert status == 1, err[-2000:]
            assert f"holds {holds} bytes; this case needs exactly {needs}" in err, err[-2000:]
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait(timeout=30)


def test_sigterm_ends_each_rank_with_one_line_and_143_no_traceback_no_ucx_log(tmp_path):
    # 10,000 samples (the most --samples takes, as in kvbench run) of ≥ 20 ms: rank 1 measures until the signal
    port, db = launch_port(), tmp_path / "k.sqlite"
    target = launch(0, port, "--block-size", "64KiB", "--batch", "8", "--timeout", "120", "--",
                    "--bench", "net.read", "--samples", "10000", "--db", f"sqlite:///{db}")
    measured = launch(1, port, "--block-size", "64KiB", "--batch", "8", "--timeout", "120", "--",
                      "--bench", "net.read", "--samples", "10000", "--db", f"sqlite:///{db}")
    try:
        def measuring() -> bool:
            if measured.poll() is not None or not db.exists():
                return measured.poll() is not None
            try:
                with sqlite3.connect(db) as con:
                    return con.execute("SELECT count(*) FROM run").fetchone()[0] >= 2  # both ranks' runs
            except sqlite3.Error:
                return False

        wait_until(measuring, 240, "rank 1's run beginning")
        assert measured.poll() is None, measured.communicate()[1][-2000:]
        measured.send_signal(signal.SIGTERM)
        status, err = ended(measured, 120)
        assert status == 143, err[-2000:]
        assert "Traceback" not in err and "typer" not in err, err[-2000:]
        assert err.strip().splitlines()[-1].startswith("kvbench: interrupted (SIGTERM); run "), err[-2000:]

        assert target.poll() is None  # rank 0 measures, or waits for rank 1 at a barrier, within its timeout
        target.send_signal(signal.SIGTERM)
        status, err = ended(target, 120)
        last = err.strip().splitlines()[-1]
        assert status == 143 and "Traceback" not in err, err[-2000:]
        assert last.startswith("kvbench: interrupted (SIGTERM); run ") or \
            last == "python -m kvbench.cluster.launch: interrupted (SIGTERM); this rank stopped", err[-2000:]
        assert not ucx_logs_of(target.pid) and not ucx_logs_of(measured.pid)
    finally:
        for proc in (measured, target):
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_rank_0_killed_while_it_waits_leaves_no_ucx_log(signum, tmp_path):
    """Every rank measures, so it reads its UCX log: it reads it through the open descriptor once
    the name is gone, and its target unlinks its own; even SIGKILL leaves nothing behind."""
    port = launch_port()
    target = launch(0, port, "--block-size", "64KiB", "--batch", "8", "--timeout", "120", "--", "--db",
                    f"sqlite:///{tmp_path / 'k.sqlite'}")

    def log_open_and_unlinked() -> bool:
        """UCX writes its log to an open file that no longer has a name in the temp folder."""
        if target.poll() is not None:
            return True
        links = []
        for fd in glob.glob(f"/proc/{target.pid}/fd/*"):
            try:
                links.append(os.readlink(fd))
            except OSError:
                pass
        return any(f"kvbench-ucx-{target.pid}-" in link and link.endswith(" (deleted)") for link in links)

    try:
        wait_until(log_open_and_unlinked, 240, "rank 0's UCX log open and unlinked")
        assert target.poll() is None, target.communicate()[1][-2000:]
        target.send_signal(signum)
        status, err = ended(target, 120)
        assert status in (143, -signal.SIGKILL), err[-2000:]
        assert not ucx_logs_of(target.pid)
    finally:
        target.kill()
        target.wait(timeout=30)


@pytest.mark.parametrize("rank,world", [(1, 3), (2, 3), (1, 2)])
def test_a_rank_with_another_world_size_or_started_twice_is_refused_in_one_line(rank, world, tmp_path):
    """Rank 0 of 2 and rank 1 measuring; then a process started with WORLD_SIZE=3 (rank 1: an IndexError
    traceback before; rank 2: it waited for a roster that never came and blamed rank 0), or a second rank 1
    (both measured the same pairs, the later one's failing): rank 0 refuses it in one line, exit 2."""
    port, db = launch_port(), tmp_path / "k.sqlite"
    args = ("--block-size", "64KiB", "--batch", "8", "--timeout", "120", "--", "--bench", "net.write", "--samples",
            "10000", "--db", f"sqlite:///{db}")
    ranks = [launch(0, port, *args), launch(1, port, *args)]
    try:
        def both_runs_begun() -> bool:  # each rank begins its run once rank 0 sent the roster: rank 1 holds its rank
            try:
                with sqlite3.connect(db) as con:
                    return con.execute("SELECT count(*) FROM run").fetchone()[0] >= 2
            except sqlite3.Error:
                return False

        wait_until(lambda: db.exists() and both_runs_begun(), 240, "both ranks' runs beginning")
        odd = launch(rank, port, *args, world=world, local_rank=3)  # a port of its own on this host
        status, err = ended(odd, 240)
        assert status == 2 and "Traceback" not in err, err[-2000:]
        why = (f"rank 0 runs a world of 2 ranks; this rank ({rank}) was started with a world of {world}" if world != 2
               else "rank 1 is already taken by a process on")
        assert err.strip().splitlines()[-1].startswith(f"python -m kvbench.cluster.launch: error: rank 0 refused this rank: "
                                                       f"{why}"), err[-2000:]
        assert all(proc.poll() is None for proc in ranks)  # the two it belongs with measure on
    finally:
        for proc in ranks:
            proc.kill()
            proc.wait(timeout=30)


def test_a_port_taken_on_this_host_is_said_at_once_in_one_line_exit_2(tmp_path):
    """Rank 0's target cannot listen on a --port something else holds: the rank said so only after its
    whole --timeout (waiting for a roster its own target would never hold), with exit 1."""
    import socket

    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = launch(0, port, "--timeout", "900", "--", "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
        try:
            status, err = ended(proc, 240)  # a bound on a hang, far below --timeout
        finally:
            proc.kill()
            proc.wait(timeout=30)
    assert status == 2 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == (f"python -m kvbench.cluster.launch: error: this rank's target exited with status 2: "
                                            f"python -m kvbench.cluster.peer: error: port {port} is taken on this host (NIXL "
                                            "could not listen on it): give another --port"), err[-2000:]
