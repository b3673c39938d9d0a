"""A rank killed during the rendezvous (after it sent its JOIN, before the roster came) must not take the
launch down: the other ranks measure every pair it is not in, its own pairs are recorded failed, and its
target does not outlive it (it held the port, so the next launch on that host failed). Four ranks on this
host (127.0.0.1, PMI's environment); the victim kills itself with SIGKILL right after its JOIN went out, so
the moment is the same on every box.

Timeouts below only bound hangs; they are generous because the test box is shared and slow."""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from tests.conftest import REPO, launch_port

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")

WORLD, VICTIM = 4, 2
# The victim: killed whole (SIGKILL: nothing runs on the way out) as soon as its join was taken (the roster
# came back), after writing its target's pid so the test can look for it.
VICTIM_CHILD = """
import os, signal, sys
import kvbench.cluster.launch as launch
from kvbench.cluster import rendezvous

started = launch._start_target
joined = rendezvous.Rendezvous.join

def start_target(*args, **kwargs):
    target = started(*args, **kwargs)
    with open(sys.argv[1], "w") as f:
        f.write(str(target.pid))
    return target

def join(self, *args, **kwargs):
    # killed once rank 0 has taken the join and sent the roster (it knows where this rank is): a fixed
    # sleep after sending JOIN lost the race on a busy box, and the rank was stored as never joined
    roster = joined(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
    return roster

launch._start_target = start_target
rendezvous.Rendezvous.join = join
sys.exit(launch.main(sys.argv[2:]))
"""


def _outcomes(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    """(exit status, standard error) of every rank; any still running when one fails is killed with its group."""
    outcomes = []
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=900)
            outcomes.append((proc.returncode, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    return outcomes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: its parent has not reaped it yet
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_rank_killed_after_its_join_leaves_the_others_running_and_no_target_behind(tmp_path):
    port, db = launch_port(), tmp_path / "k.sqlite"
    # as a launcher starts ranks: without the UCX_LOG_FILE and NIXL_LOG_LEVEL this test process got when it loaded NIXL
    base = {k: v for k, v in os.environ.items() if k not in ("UCX_LOG_FILE", "NIXL_LOG_LEVEL") and not k.startswith(
        ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_"))}
    own = ["--peer-addr", "127.0.0.1", "--port", str(port), "--block-size", "64KiB", "--batch", "8", "--timeout", "60",
           "--", "--bench", "net.write", "--samples", "5", "--db", f"sqlite:///{db}"]
    pid_file = tmp_path / "victim-target.pid"
    procs = []
    for rank in range(WORLD):
        env = {**base, "PMI_RANK": str(rank), "PMI_SIZE": str(WORLD), "MPI_LOCALRANKID": str(rank),
               "PYTHONPATH": str(REPO), "UCX_TLS": "tcp,self"}
        cmd = ([sys.executable, "-c", VICTIM_CHILD, str(pid_file), *own] if rank == VICTIM
               else [sys.executable, "-m", "kvbench.cluster.launch", *own])
        procs.append(subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, start_new_session=True))
    outcomes = _outcomes(procs)
    assert outcomes[VICTIM][0] == -signal.SIGKILL, outcomes[VICTIM][1][-2000:]
    target = int(pid_file.read_text())
    deadline = time.monotonic() + 60  # its target notices its parent's death at once (PR_SET_PDEATHSIG)
    while _alive(target) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(target), f"rank {VICTIM}'s target (pid {target}) outlived it"
    for rank, (status, err) in enumerate(outcomes):
        if rank != VICTIM:  # 1: the victim's pairs failed; never the whole launch lost at the rendezvous
            assert status == 1, err[-2500:]
            assert "Traceback" not in err and "rendezvous with rank 0" not in err, err[-2500:]
            assert ".cpp:" not in err, err[-2500:]  # NIXL's own C++ log lines stay out of the rank's stderr
            assert err.strip().splitlines()[-1].endswith("case(s) failed"), err[-2500:]
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT params, status, reason FROM result WHERE bench = 'net.write'").fetchall()
    import json

    pairs = {}
    for params, status, reason in rows:
        p = json.loads(params)
        pairs[(p["src_host"], p["dst_host"])] = (status, reason)
        # the victim joined: its pairs are stored with where it said it was, never a made-up 0.0.0.0:1
        assert p["peer_addr"] == "127.0.0.1" and p["peer_port"] != 1, p
    import socket

    lived = [f"{socket.gethostname()}/{r}" for r in range(WORLD) if r != VICTIM]
    survivors = list(itertools.permutations(lived, 2))
    for pair in survivors:
        assert pairs.get(pair, ("missing",))[0] == "ok", (pair, pairs.get(pair))
    failed = [v for k, v in pairs.items() if k not in survivors]
    assert len(pairs) == WORLD * (WORLD - 1)  # every pair recorded once, the victim's too
    assert len(failed) == 2 * (WORLD - 1) and all(s == "failed" and r for s, r in failed), failed


def test_a_rank_that_never_joins_is_stored_by_its_rank_with_no_address_and_shown_as_unknown(tmp_path):
    """World 3, rank 2 never started: ranks 0 and 1 measure each other, and the 4 pairs with rank 2 are
    stored failed with both ranks, the host that joined, and no address or host for rank 2 (they were
    `peer_addr=0.0.0.0 peer_port=1`, and a `?` host shared by every rank that never joined). The matrix
    names its side `rank 2 (host unknown)`."""
    import json
    import socket

    from tests.inproc import run_in_process as cli

    world, port, db = 3, launch_port(), tmp_path / "k.sqlite"
    base = {k: v for k, v in os.environ.items() if k not in ("UCX_LOG_FILE", "NIXL_LOG_LEVEL") and not k.startswith(
        ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_"))}
    own = ["--peer-addr", "127.0.0.1", "--port", str(port), "--block-size", "64KiB", "--batch", "8", "--timeout", "40",
           "--", "--bench", "net.write", "--samples", "5", "--db", f"sqlite:///{db}"]
    procs = [subprocess.Popen([sys.executable, "-m", "kvbench.cluster.launch", *own],
                              env={**base, "PMI_RANK": str(rank), "PMI_SIZE": str(world), "MPI_LOCALRANKID": str(rank),
                                   "PYTHONPATH": str(REPO), "UCX_TLS": "tcp,self"},
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) for rank in range(2)]
    outcomes = _outcomes(procs)
    for status, err in outcomes:  # 1: rank 2's pairs failed
        assert status == 1 and "Traceback" not in err, err[-2500:]
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT params, status, reason, extra FROM result WHERE bench = 'net.write'").fetchall()
    assert len(rows) == world * (world - 1), rows
    here = [f"{socket.gethostname()}/{r}" for r in range(2)]
    for params, status, reason, extra in rows:
        p, record = json.loads(params), json.loads(extra)["cluster"]
        if 2 not in (record["src_rank"], record["dst_rank"]):
            assert status == "ok" and p["peer_addr"] == "127.0.0.1", (p, reason)
            continue
        assert status == "failed" and "rank 2 (host unknown: it never joined)" in reason, reason
        assert "0.0.0.0" not in params and "?" not in params + json.dumps(record), (p, record)
        if record["dst_rank"] == 2:  # net.write: the bytes go to the target, whose address nobody knows
            assert "peer_addr" not in p and "peer_port" not in p and "dst_host" not in p, p
            assert record["dst_host"] is None and record["src_host"] == here[record["src_rank"]], record
        else:
            assert "src_host" not in p and record["src_host"] is None, (p, record)
    shown = cli("fleet", "--pairs", "--run", "latest", "--db", f"sqlite:///{db}", "--json", "-")
    assert shown.returncode == 0, shown.stderr
    (matrix,) = json.loads(shown.stdout)["matrices"]
    cells = {(c["src_host"], c["dst_host"]): c["status"] for c in matrix["cells"]}
    gone = "rank 2 (host unknown)"
    assert cells == {**{(a, b): "ok" for a in here for b in here if a != b},
                     **{(h, gone): "failed" for h in here}, **{(gone, h): "failed" for h in here}}, cells
