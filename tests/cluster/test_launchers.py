"""What each launcher's environment gives a rank (kvbench/cluster/launchers.py), and rank 0's rendezvous
logic (kvbench/cluster/coordinator.py) fed messages and a clock by hand."""

import json

import pytest

from kvbench.cluster.coordinator import Coordinator
from kvbench.cluster.launchers import first_host, local_rank, rank0_host, rank_and_world
from kvbench.errors import BadInput

LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                 "SLURM_JOB_NODELIST", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID")


@pytest.fixture
def env(monkeypatch):
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.mark.parametrize("given,want", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "h0"}, (3, 8, 1, ("MASTER_ADDR", "h0"))),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "gpu-[007-022]"},
     (5, 16, 0, ("SLURM_JOB_NODELIST", "gpu-007"))),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "2"},
     (2, 4, 2, None)),
    ({"PMI_RANK": "1", "PMI_SIZE": "3", "MPI_LOCALRANKID": "0"}, (1, 3, 0, None)),
])
def test_each_launcher_s_environment(env, given, want):
    for var, value in given.items():
        env.setenv(var, value)
    rank, world, local, host = want
    assert rank_and_world() == (rank, world) and local_rank() == local
    if host:
        assert rank0_host(None) == host
    else:
        with pytest.raises(BadInput, match="give --peer-addr"):
            rank0_host(None)
    assert rank0_host("10.0.0.1") == ("--peer-addr", "10.0.0.1")


@pytest.mark.parametrize("nodelist,first", [("node[01-04]", "node01"), ("a,b", "a"), ("gpu-[003-007,010]-ib,cpu1",
                                            "gpu-003-ib"), ("rack[1-2]-n[7,9]", "rack1-n7"), ("solo", "solo")])
def test_the_first_host_of_a_slurm_node_list(nodelist, first):
    assert first_host(nodelist) == first


def test_coordinator_sends_the_roster_when_all_joined_and_releases_barriers():
    c = Coordinator(3, timeout_s=10, now=0)
    out = []
    for r in range(3):
        out += c.on_message(f"a{r}", ("JOIN:" + json.dumps({"rank": r, "addr": f"10.0.0.{r}"})).encode(), now=1)
    rosters = [(to, json.loads(m[7:])) for to, m in out]
    assert [to for to, _ in rosters] == ["a0", "a1", "a2"] and rosters[0][1]["dead"] == []
    assert [e["addr"] for e in rosters[0][1]["ranks"]] == ["10.0.0.0", "10.0.0.1", "10.0.0.2"]
    assert c.on_message("a0", b"BAR:0", now=2) == [] and c.on_message("a1", b"BAR:0", now=2) == []
    assert c.on_message("a2", b"BAR:0", now=2) == [(f"a{r}", b"GO:0:{}") for r in range(3)]
    assert c.on_message("a1", b"ALIVE", now=3) == [("a1", b"OK")]


def test_a_silent_rank_becomes_dead_and_barriers_stop_waiting_for_it():
    c = Coordinator(3, timeout_s=10, now=0)
    for r in range(3):
        c.on_message(f"a{r}", ("JOIN:" + json.dumps({"rank": r})).encode(), now=1)
    for r in range(3):
        c.on_message(f"a{r}", b"BAR:0", now=2)
    c.on_message("a0", b"BAR:1", now=3)
    c.on_message("a1", b"BAR:1", now=3)
    assert c.tick(now=12) == []  # rank 2 was last heard at 2: not yet silent for 10 s
    c.on_message("a0", b"ALIVE", now=12)
    c.on_message("a1", b"ALIVE", now=12)
    out = c.tick(now=12.5)
    assert out == [("a0", b'GO:1:{"2": 0}'), ("a1", b'GO:1:{"2": 0}')]  # rank 2 reached barrier 0 only
    c.on_message("a0", b"DONE", now=13)
    assert not c.finished()
    c.on_message("a1", b"DONE", now=13)
    assert c.finished()


def test_a_rank_that_never_joins_is_dead_in_the_roster():
    c = Coordinator(3, timeout_s=10, now=0)
    c.on_message("a0", ("JOIN:" + json.dumps({"rank": 0})).encode(), now=1)
    c.on_message("a1", ("JOIN:" + json.dumps({"rank": 1})).encode(), now=1)
    assert c.tick(now=5) == []
    c.on_message("a0", b"ALIVE", now=10)
    c.on_message("a1", b"ALIVE", now=10)
    out = c.tick(now=10.5)
    roster = json.loads(out[0][1][7:])
    assert roster["dead"] == [2] and roster["ranks"][2] is None


def test_a_rank_started_twice_is_refused_and_the_first_keeps_it():
    c = Coordinator(2, timeout_s=10, now=0)
    c.on_message("a0", ("JOIN:" + json.dumps({"rank": 0, "world": 2})).encode(), now=1)
    assert c.on_message("a1", ("JOIN:" + json.dumps({"rank": 1, "world": 2, "host": "h1"})).encode(), now=1)
    out = c.on_message("b1", ("JOIN:" + json.dumps({"rank": 1, "world": 2, "host": "h2"})).encode(), now=2)
    assert out == [("b1", b"REFUSED:rank 1 is already taken by a process on h1: start each rank once")]
    assert json.loads(c.on_message("a1", ("JOIN:" + json.dumps({"rank": 1})).encode(), now=3)[0][1][7:])["dead"] == []


@pytest.mark.parametrize("rank,world", [(1, 3), (2, 3)])  # inside rank 0's world of 2, and beyond it
def test_a_rank_started_with_another_world_size_is_refused_naming_both(rank, world):
    """Its schedule would differ from everyone's (it failed with an IndexError traceback, or waited for a
    roster that never came and blamed rank 0 for going silent)."""
    c = Coordinator(2, timeout_s=10, now=0)
    out = c.on_message("x", ("JOIN:" + json.dumps({"rank": rank, "world": world})).encode(), now=1)
    assert out == [("x", f"REFUSED:rank 0 runs a world of 2 ranks; this rank ({rank}) was started with a world of "
                         f"{world}: start every rank with the same world size".encode())]
    assert c.agents == {}


def test_rank_0_s_host_with_no_route_from_this_host_is_refused_in_one_line(tmp_path):
    """In a network namespace of this test's own with only its loopback up, no address but 127.0.0.0/8
    is routed: the rank named MASTER_ADDR in one line, exit 2 (it ended in an OSError traceback)."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.conftest import REPO

    if shutil.which("ip") is None:
        pytest.skip("iproute2 (ip) is not installed")
    ns = f"kvb{os.getpid()}route"
    made = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"a network namespace cannot be made here: {made.stderr.strip()[:120]}")
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RANK", "WORLD_SIZE", "MASTER_"))},
               "RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.231.9.9", "PYTHONPATH": str(REPO)}
        proc = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "kvbench.cluster.launch", "--timeout", "900",
                               "--", "--db", f"sqlite:///{tmp_path / 'k.sqlite'}"],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip() == ("python -m kvbench.cluster.launch: error: bad MASTER_ADDR '10.231.9.9': this host has no "
                                   "route to 10.231.9.9 (Network is unreachable)")
    assert not (tmp_path / "k.sqlite").exists()  # refused before the database was made


def test_every_rank_gets_the_one_cluster_id_rank_0_minted_in_the_roster():
    c = Coordinator(3, timeout_s=10, now=0)
    out = []
    for r in range(3):
        out += c.on_message(f"a{r}", ("JOIN:" + json.dumps({"rank": r, "world": 3})).encode(), now=1)
    ids = {json.loads(m[7:])["cluster"] for _, m in out}
    assert ids == {c.cluster_id} and len(c.cluster_id) > 8
    assert Coordinator(3, timeout_s=10, now=0).cluster_id != c.cluster_id  # each launch its own


def test_a_rank_that_joins_after_the_roster_went_out_is_refused_naming_the_cluster_run():
    """It used to get the roster with itself dead in it, and end saying rank 0 gave up waiting for it."""
    c = Coordinator(3, timeout_s=10, now=0)
    for r in (0, 1):
        c.on_message(f"a{r}", ("JOIN:" + json.dumps({"rank": r})).encode(), now=1)
    c.on_message("a0", b"ALIVE", now=10)
    c.on_message("a1", b"ALIVE", now=10)
    assert c.tick(now=10.5)  # the roster went out without rank 2
    out = c.on_message("late", ("JOIN:" + json.dumps({"rank": 2})).encode(), now=11)
    assert out == [("late", f"REFUSED:cluster run {c.cluster_id} began without rank 2 (it had not joined within 10 s, "
                            "or it is not of this launch): start every rank of a launch together".encode())]
    assert json.loads(c.on_message("a1", ("JOIN:" + json.dumps({"rank": 1})).encode(), now=12)[0][1][7:])["dead"] == [2]


def test_a_rank_of_another_launch_is_refused_naming_both_launches():
    c = Coordinator(2, timeout_s=10, now=0, launch="SLURM_JOB_ID=7.0")
    out = c.on_message("x", ("JOIN:" + json.dumps({"rank": 1, "world": 2, "launch": "SLURM_JOB_ID=8.0"})).encode(), now=1)
    assert out == [("x", f"REFUSED:rank 0 belongs to launch SLURM_JOB_ID=7.0 (cluster run {c.cluster_id}); this rank "
                         "(1) to launch SLURM_JOB_ID=8.0: a rank joins only the launch that started it".encode())]
    c.on_message("y", ("JOIN:" + json.dumps({"rank": 1, "world": 2, "launch": "SLURM_JOB_ID=7.0"})).encode(), now=1)
    assert c.agents == {1: "y"}  # its own launch's rank 1 is taken


@pytest.mark.parametrize("env,want", [
    ({"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0"}, "SLURM_JOB_ID=42.0"),
    ({"TORCHELASTIC_RUN_ID": "none"}, ""),  # torchrun without --rdzv-id: says nothing about the launch
    ({"TORCHELASTIC_RUN_ID": "kvbench"}, "TORCHELASTIC_RUN_ID=kvbench"),
    ({}, ""),
])
def test_the_launch_id_comes_from_the_launcher(monkeypatch, env, want):
    from kvbench.cluster.launchers import LAUNCH_VARS, launch_id

    for names in LAUNCH_VARS:
        for name in names:
            monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert launch_id() == want
