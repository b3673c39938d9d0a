"""free_ports (kvbench/peers/protocol.py): the first of N consecutive TCP ports nobody has bound, drawn
below the kernel's ephemeral range, where no outgoing connection takes its local port. A launch of
several ranks on one host listens on --port plus each local rank: a test that picked its --port where
the neighbours' connections draw theirs once lost rank 2's port between its choice and the rank's bind."""

import socket

from kvbench.peers import protocol
from kvbench.peers.protocol import free_port, free_ports


def _low() -> int:
    return int(protocol.EPHEMERAL_RANGE.read_text().split()[0])


def test_every_port_of_the_range_can_be_bound_and_none_is_ephemeral():
    first = free_ports(8)
    assert protocol.LOWEST_PORT <= first and first + 8 <= _low()
    held = []
    try:
        for port in range(first, first + 8):  # each one binds, on every address, as a NIXL listener's does
            s = socket.socket()
            s.bind(("", port))
            s.listen()
            held.append(s)
    finally:
        for s in held:
            s.close()


def test_a_range_with_a_port_held_inside_it_is_never_given(monkeypatch):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    draws = iter([taken - 2 - protocol.LOWEST_PORT, 7])  # the first draw would cover the held port
    monkeypatch.setattr(protocol, "_ephemeral_low", lambda: 65000)
    monkeypatch.setattr(protocol.secrets, "randbelow", lambda n: next(draws))
    try:
        assert free_ports(4) == protocol.LOWEST_PORT + 7
    finally:
        holder.close()


def test_one_port_is_a_range_of_one():
    port = free_port()
    assert protocol.LOWEST_PORT <= port < _low()
