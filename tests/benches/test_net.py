"""net.read / net.write over NIXL UCX: in one process and to a peer process, with faults."""

import sys

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.peers.initiator import ProcessPeer
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)


def case(bench, **params):
    spec = get_bench(bench)
    # timeout_s: also how long a peer process has to start (numpy, NIXL, UCX): > 5 s on a busy box
    return Case(bench, spec.canonical_params({"block_size": "64KiB", "batch": 16, "timeout_s": 120, **params}))


@pytest.mark.parametrize("bench", ["net.write", "net.read"])
@pytest.mark.parametrize("peer", ["inproc", "local"])
def test_transfers_to_a_peer_are_verified(facts, bench, peer):
    result = run_case(case(bench, peer=peer), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.measurement.bytes_per_op == 16 * 65536
    assert result.metadata["nixl_backend"] == "UCX"
    assert result.metadata["buffers"]["remote"]["peer"] == peer
    assert result.metadata["ucx_devices"], "UCX's own record of the transport used is missing"


def test_gpu_memory_is_skipped_with_the_reason(facts):
    result = run_case(case("net.write", local="device"), facts, FAST)
    if result.status == "ok":
        pytest.skip("a GPU is present")
    assert result.status == "skipped" and "no CUDA device" in result.reason


def test_a_peer_that_never_answers_times_out_and_is_killed(facts, monkeypatch):
    monkeypatch.setattr(ProcessPeer, "command", [sys.executable, "-c", "import time; time.sleep(600)"])
    result = run_case(case("net.write", peer="local", timeout_s=2), facts, FAST)
    assert result.status == "failed" and "did not answer within 2 s" in result.reason


# A peer that writes more to its standard error than a pipe holds (64 KiB; NIXL's warnings over a long
# run), then serves as `python -m kvbench.cluster.peer` does, or fails with one last line.
CHATTY = ("import runpy, sys; sys.stderr.write('warning\\n' * (1 << 17)); sys.stderr.flush(); "
          "sys.argv[0] = 'kvbench.cluster.peer'; {then}")


@pytest.mark.parametrize("then,reason", [("runpy.run_module('kvbench.cluster.peer', run_name='__main__')", None),
                                         ("sys.exit('the last word')", "exited with status 1: the last word")])
def test_a_peer_that_writes_much_to_its_stderr_is_not_stopped_by_it(facts, monkeypatch, then, reason):
    """The peer's standard error goes to a file, not a pipe nobody reads while it runs: a full pipe
    stopped the peer inside its next write, and the case failed with 'did not answer' after timeout_s."""
    monkeypatch.setattr(ProcessPeer, "command", [sys.executable, "-c", CHATTY.format(then=then)])
    result = run_case(case("net.write", peer="local", timeout_s=60), facts, FAST)
    if reason is None:
        assert result.status == "ok", result.reason
    else:
        assert result.status == "failed" and f"peer process {reason}" in result.reason, result.reason


def test_a_peer_that_dies_mid_run_fails_the_case():
    """Every wait here is event-driven (a NIXL notification, a transfer's state); `timeout_s` only
    bounds a hang, so it is generous: a busy box once took over 5 s to start the peer process."""
    import os
    import signal

    bench = get_bench("net.read")
    prepared = bench.prepare(case("net.read", peer="local", timeout_s=120).params)
    try:
        prepared.workload.run()  # works while the peer lives
        pid = prepared.metadata["buffers"]["remote"]["pid"]
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="NIXL transfer failed|ERR|did not finish"):
            for _ in range(2000):  # UCX notices the dead endpoint within a few transfers
                prepared.workload.run()
    finally:
        prepared.close()


def test_a_peer_started_by_a_launcher_is_reached_by_address(facts):
    """What `srun -N2` / `torchrun --nnodes 2` do, on one host: rank 0 waits, rank 1 measures."""
    import subprocess

    from kvbench.peers.protocol import free_port

    port, size = free_port(), 16 * 65536
    target = subprocess.Popen([sys.executable, "-m", "kvbench.cluster.peer", "--name", "kvbench-target", "--port", str(port),
                               "--initiator", "kvbench-init", "--size", str(size), "--timeout", "60"],
                              stderr=subprocess.PIPE)
    try:
        for bench in ("net.write", "net.read"):
            result = run_case(case(bench, peer="remote", peer_port=port), facts, FAST)
            assert result.status == "ok", result.reason
            assert result.metadata["buffers"]["remote"]["address"] == f"127.0.0.1:{port}"
    finally:
        target.kill()
        target.wait(timeout=10)


def test_launch_two_ranks_each_serve_and_measure_the_other(tmp_path):
    """`python -m kvbench.cluster.launch` as srun or torchrun start it, both ranks on this host: each serves a
    target (on --port plus its LOCAL_RANK) and measures the other's (pattern pairs: 0 → 1, then 1 → 0)."""
    import json
    import os
    import subprocess

    from tests.conftest import REPO, launch_port

    port = launch_port()  # rank 1 listens on port + 1
    common = [sys.executable, "-m", "kvbench.cluster.launch", "--port", str(port), "--block-size", "64KiB", "--batch", "8",
              "--timeout", "120"]  # bounds a hang only: on the CI box at a load of 30, rank 0 took over 30 s to start
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2"}
    run_args = ["--", "--bench", "net.write", "--bench", "net.read", "--db", f"sqlite:///{tmp_path / 'k.sqlite'}",
                "--json", str(tmp_path / "run{rank}.json")]
    ranks = [subprocess.Popen([*common, *run_args], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, cwd=REPO,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    try:
        for rank in ranks:
            _, err = rank.communicate(timeout=400)
            assert rank.returncode == 0, err[-2000:]
        for r in (0, 1):
            results = json.loads((tmp_path / f"run{r}.json").read_text())["results"]
            assert [x["status"] for x in results] == ["ok", "ok"]
            assert all(x["params"]["peer"] == "remote" and x["verified"] for x in results)
            assert {x["params"]["peer_name"] for x in results} == {f"kvbench-target-r{1 - r}"}
    finally:
        for rank in ranks:
            rank.kill()
            rank.wait(timeout=10)


@pytest.mark.parametrize("peer", ["inproc", "local"])
def test_rails_spread_the_batch_over_one_agent_per_device(facts, peer):
    """On one host the only device is the loopback; on a CX-8 box: rails=mlx5_0:1,mlx5_1:1."""
    result = run_case(case("net.write", peer=peer, rails="lo,lo"), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.metadata["rails"] == ["lo", "lo"]
    assert len(result.metadata["telemetry"]) == 2  # one request per rail


def test_rails_peak_is_per_card_with_the_cx8_cap():
    from kvbench.hardware.facts import Nic
    from kvbench.hardware.path import path_peak
    from tests.hardware.test_sysfs import _facts

    facts = _facts()
    cx8 = (Nic("mlx5_2/1", "ethernet", None, 0, None, model="ConnectX-8"),
           Nic("mlx5_2/2", "ethernet", None, 0, None, model="ConnectX-8"))
    facts = type(facts)(**{**facts.__dict__, "nics": facts.nics + cx8})
    both = path_peak([("nic_rails", ("mlx5_2:1", "mlx5_2:2"))], facts).peak
    assert both.gbps == 100.0  # 2 x 400GbE: 100 GB/s only across both ports
    one = path_peak([("nic_rails", ("mlx5_2:1",))], facts).peak
    assert one.gbps == 50.0
    assert path_peak([("nic_rails", ("mlx5_9:1",))], facts).peak is None


def test_a_peer_process_leaves_no_ucx_log_behind(facts):
    import glob
    import os
    import tempfile

    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "kvbench-ucx-*.log")))
    result = run_case(case("net.write", peer="local"), facts, FAST)
    assert result.status == "ok", result.reason
    peer_pid = result.metadata["buffers"]["remote"]["pid"]
    left = set(glob.glob(os.path.join(tempfile.gettempdir(), "kvbench-ucx-*.log"))) - before
    assert not [p for p in left if str(peer_pid) in p]


def test_net_write_between_two_network_namespaces_over_tcp(tmp_path):
    """Two hosts as a launcher starts them, made of two network namespaces joined by a veth pair
    (addresses only inside them): rank 0 serves in one, rank 1 measures from the other over TCP,
    reaching rank 0 by a host name (MASTER_ADDR as torchrun and Slurm give it), which rank 1's
    namespace resolves through its own /etc/netns/NAME/hosts. Rank 0 measures rank 1 too (pairs)."""
    import json
    import os
    import shutil
    import subprocess
    from pathlib import Path

    from tests.conftest import REPO

    if shutil.which("ip") is None:
        pytest.skip("iproute2 (ip) is not installed")
    tag = f"kv{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    setup = [f"ip netns add {a}", f"ip netns add {b}", f"ip link add {a}v type veth peer name {b}v",
             f"ip link set {a}v netns {a}", f"ip link set {b}v netns {b}",
             f"ip -n {a} addr add 10.213.7.1/24 dev {a}v", f"ip -n {b} addr add 10.213.7.2/24 dev {b}v",
             f"ip -n {a} link set {a}v up", f"ip -n {b} link set {b}v up", f"ip -n {a} link set lo up",
             f"ip -n {b} link set lo up"]
    hosts = [Path("/etc/netns") / a, Path("/etc/netns") / b]
    try:
        for command in setup:
            made = subprocess.run(command.split(), capture_output=True, text=True)
            if made.returncode != 0:
                pytest.skip(f"network namespaces cannot be made here: {command}: {made.stderr.strip()[:120]}")
        for folder in hosts:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text(f"127.0.0.1 localhost\n10.213.7.1 {a}-rank0\n")
        env = {**os.environ, "MASTER_ADDR": f"{a}-rank0", "UCX_TLS": "tcp,self", "PYTHONPATH": str(REPO),
               "WORLD_SIZE": "2"}
        common = [sys.executable, "-m", "kvbench.cluster.launch", "--port", "15555", "--block-size", "64KiB", "--batch", "8",
                  "--timeout", "120"]  # also how long rank 1 waits for rank 0 to start: > 30 s at load 30
        target = subprocess.Popen(["ip", "netns", "exec", a, *common, "--", "--bench", "net.write", "--db",
                                   f"sqlite:///{tmp_path / 'k.sqlite'}"], env={**env, "RANK": "0"}, cwd=REPO,
                                  stderr=subprocess.PIPE)
        try:
            out = tmp_path / "run.json"
            measured = subprocess.run(["ip", "netns", "exec", b, *common, "--", "--bench", "net.write", "--db",
                                       f"sqlite:///{tmp_path / 'k.sqlite'}", "--json", str(out)],
                                      env={**env, "RANK": "1"}, cwd=REPO, capture_output=True, text=True, timeout=180)
            assert measured.returncode == 0, measured.stderr[-2000:]
            (result,) = json.loads(out.read_text())["results"]
            assert result["status"] == "ok" and result["verified"]
            assert result["params"]["peer_addr"] == "10.213.7.1"
            devices = result["metadata"]["ucx_devices"]
            assert devices and all(d.startswith("tcp/") for d in devices), devices
        finally:
            target.kill()
            target.wait(timeout=10)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        for folder in hosts:
            shutil.rmtree(folder, ignore_errors=True)

