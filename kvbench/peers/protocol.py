"""What both sides of a network benchmark agree on: the pattern the far side holds, its checksum,
how long to wait for NIXL metadata, and free ports for NIXL listeners (drawn below the ephemeral range;
tried again on another when one was taken before the listener bound it)."""

from __future__ import annotations

import secrets
import socket
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import numpy as np

from kvbench.memory.pattern import fill_pattern

PATTERN_SEED = 11  # the bytes the initiator expects to read back from the far side


def region_crc(region) -> int:
    """crc32 of a region's bytes (a GPU region's are copied to the host first)."""
    data = region.host_array if region.host_array is not None else region.device_array.get()
    return zlib.crc32(memoryview(np.ascontiguousarray(data)))


def expected_crc(size: int, seed: int) -> int:
    """crc32 of `size` bytes of the pattern for `seed`."""
    data = np.empty(size, dtype=np.uint8)
    fill_pattern(data, seed=seed)
    return zlib.crc32(memoryview(data))


def fill_region(region, seed: int) -> None:
    """The pattern for `seed` in a host or GPU region."""
    if region.host_array is not None:
        fill_pattern(region.host_array, seed=seed)
    else:
        pattern = np.empty(region.size_bytes, dtype=np.uint8)
        fill_pattern(pattern, seed=seed)
        region.device_array.set(pattern)


def wait_for_metadata(agent, remote: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not agent.check_remote_metadata(remote):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no NIXL metadata from agent '{remote}' within {timeout_s:.0f} s")
        time.sleep(0.01)


def fetch_metadata(agent, remote: str, address: str, port: int, deadline: float, *, region=None,
                   send_own: bool = False, retry_s: float = 1.0, give_up: Callable[[], bool] = lambda: False) -> bool:
    """Ask `remote`'s NIXL listener at address:port for its metadata (with `send_own`, send this
    agent's too) until this agent holds it, and with `region` (descriptors from get_xfer_descs) until
    it names that region: True then, False once `deadline` (time.monotonic() seconds) has passed or
    `give_up()` says so. Each ask waits `retry_s` for its answer before the next, because a peer that
    is still starting must be asked again, but asking in a tight loop floods its listener (a test that
    did so waited forever on a busy CI box)."""
    def held() -> bool:
        return bool(agent.check_remote_metadata(remote) if region is None else agent.check_remote_metadata(remote, region))

    while not held():
        if time.monotonic() > deadline or give_up():
            return False
        agent.fetch_remote_metadata(remote, address, port)
        if send_own:
            agent.send_local_metadata(address, port)
        wait_until = min(time.monotonic() + retry_s, deadline)
        while time.monotonic() < wait_until and not held():
            time.sleep(0.01)
    return True


def stderr_file() -> IO[bytes]:
    """Where a child process (a peer, a rank's target) writes its standard error: an unnamed temporary
    file, read once it has exited. A pipe nobody reads while the child runs fills (64 KiB) and stops
    the child inside its next write, so it answers nobody any more."""
    return tempfile.TemporaryFile(prefix="kvbench-stderr-")


def last_line(stderr: IO[bytes]) -> str:
    """The last line a child wrote to its `stderr_file()`, "" if none."""
    stderr.seek(0)
    lines = stderr.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000  # below: ports services are configured on by number
PORT_DRAWS = 200  # ranges drawn before falling back to one the kernel picks


def free_port() -> int:
    """A TCP port nobody listens on now, for a NIXL listener (`free_ports`)."""
    return free_ports(1)


def free_ports(count: int) -> int:
    """The first of `count` consecutive TCP ports nobody has bound now, on any address: for a listener,
    or a launch on one host whose rank r listens on the first plus its local rank. Drawn at random below
    the kernel's ephemeral range (ip_local_port_range), where no outgoing connection takes its local
    port: a port found free there stays free until something binds it by number. The port binding 0
    returns is in that range, and the neighbours' outgoing connections draw from it: on a busy CI box
    rank 2 of a 4-rank launch could not listen on its port (the test's kernel-picked port + 2)."""
    low = _ephemeral_low()
    for _ in range(PORT_DRAWS if low - LOWEST_PORT > count else 0):
        first = LOWEST_PORT + secrets.randbelow(low - LOWEST_PORT - count)
        if all(_bindable(first + i) for i in range(count)):
            return first
    for _ in range(PORT_DRAWS):  # no room below the ephemeral range: the kernel's pick, its neighbours checked
        with socket.socket() as s:
            s.bind(("", 0))
            first = s.getsockname()[1]
        if first + count <= 65536 and all(_bindable(first + i) for i in range(1, count)):
            return first
    raise OSError(f"no {count} consecutive free TCP ports found on this host")


def _bindable(port: int) -> bool:
    """Whether a TCP socket can bind `port` on every address now (nothing listens on it, on any address)."""
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


T = TypeVar("T")
BIND_ATTEMPTS = 5  # free ports a listener is tried on before its bind error stands


def port_taken(exc: BaseException) -> bool:
    """Whether `exc` says a listener could not bind its port: NIXL's "Failed to bind metadata listener
    socket" in this process, or a peer process's "port N is taken on this host" (kvbench/cluster/serve.py)."""
    text = str(exc).lower()
    return "bind" in text or "is taken on this host" in text


def on_free_port(start: Callable[[int], T]) -> tuple[T, int]:
    """(start(port), port) for a port free_port() found. Nothing holds that port until the listener
    binds it, so another process can take it first (a busy box, several ranks' agents starting at
    once: "Failed to bind metadata listener socket" failed a case of the 4-namespace CI test): a start
    that fails on its bind is tried again on another free port, up to BIND_ATTEMPTS times. Any other
    failure, or the last bind failure, is raised as it came."""
    for attempt in range(BIND_ATTEMPTS):
        port = free_port()
        try:
            return start(port), port
        except RuntimeError as exc:
            if not port_taken(exc) or attempt == BIND_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises
