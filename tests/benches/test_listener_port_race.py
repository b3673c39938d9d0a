"""A NIXL listener's port is one free_port() found free; nothing holds it until NIXL (in this process
or in a peer process) binds it, so another process can take it in between (the fresh-clone CI once
failed a case with "Failed to bind metadata listener socket"). These tests take it on purpose in
that moment, and check that the listener starts again on another free port (kvbench/peers/protocol.py,
on_free_port: the one retry every listener goes through)."""

from __future__ import annotations

import ast
import socket
from pathlib import Path

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.peers import protocol
from tests.conftest import REPO

needs_ucx = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                               reason=f"{backend_unavailable_reason('UCX')}")


class Race:
    """free_port() as the race plays it once armed: the next port it finds is taken (bound and
    listening, by this test) before the caller gets it."""

    def __init__(self) -> None:
        self.real = protocol.free_port
        self.armed = False
        self.given: list[int] = []
        self.holders: list[socket.socket] = []

    def __call__(self) -> int:
        port = self.real()
        if self.armed:
            holder = socket.socket()
            holder.bind(("127.0.0.1", port))
            holder.listen()
            self.holders.append(holder)
            self.armed = False
        self.given.append(port)
        return port


@pytest.fixture
def race(monkeypatch):
    race = Race()
    monkeypatch.setattr(protocol, "free_port", race)
    yield race
    for holder in race.holders:
        holder.close()


def listening(port: int) -> bool:
    """Whether something on this host holds `port` (a bind to it is refused)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@needs_ucx
def test_an_initiator_agent_whose_port_was_taken_listens_on_another(race):
    from kvbench.benches import net

    race.armed = True
    agent, port = net._agent_on("kvbench-race-agent", None, 0, True)
    taken, second = race.given
    assert port == second != taken and listening(port)
    del agent


@needs_ucx
def test_a_peer_process_whose_port_was_taken_is_started_again_on_another(race):
    from kvbench.backends.nixl import make_agent
    from kvbench.peers.initiator import ProcessPeer

    initiator, listen = protocol.on_free_port(lambda port: make_agent("kvbench-race-init", ["UCX"], listen_port=port))
    race.armed = True  # the peer's own port, which the peer process binds
    peer = ProcessPeer(initiator, listen, 4096, "pageable", protocol.PATTERN_SEED, 60.0)
    try:
        taken, second = race.given[-2:]
        assert peer.address == ("127.0.0.1", second) and second != taken
        assert peer.crc() == protocol.expected_crc(4096, protocol.PATTERN_SEED)  # the second peer serves
    finally:
        peer.close()


def test_only_a_refused_bind_is_tried_again_and_at_most_five_times(monkeypatch):
    monkeypatch.setattr(protocol, "free_port", iter(range(40001, 40100)).__next__)
    tried = []

    def refused(port: int):
        tried.append(port)
        raise RuntimeError("Failed to bind metadata listener socket")

    with pytest.raises(RuntimeError, match="bind"):
        protocol.on_free_port(refused)
    assert tried == [40001, 40002, 40003, 40004, 40005]

    def missing(port: int):
        tried.append(port)
        raise RuntimeError("UCX is missing")

    tried.clear()
    with pytest.raises(RuntimeError, match="UCX is missing"):  # not a port's failure: no second try
        protocol.on_free_port(missing)
    assert tried == [40006]


def test_every_listener_takes_its_port_through_the_one_retry():
    """No module but protocol.py calls free_port() itself: a port found free is bound through
    on_free_port. The one exception is ucx_perftest's server port in the network crosscheck (a peer
    tool's listener, not NIXL's)."""
    callers = set()
    for path in (REPO / "kvbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "free_port":
                callers.add(str(path.relative_to(REPO)))
    assert callers == {str(Path("kvbench/peers/protocol.py")), str(Path("kvbench/crosscheck/net.py"))}


@needs_ucx
def test_a_peer_whose_port_is_taken_says_so_in_one_line_not_a_traceback():
    import subprocess
    import sys

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "kvbench.cluster.peer", "--name", "kvbench-race-peer", "--port", str(port),
                               "--size", "4096"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    # (NIXL's own log line about the bind may come before it)
    assert proc.stderr.strip().splitlines()[-1] == (f"python -m kvbench.cluster.peer: error: port {port} is taken on this host "
                                                    "(NIXL could not listen on it): give another --port")
