"""The far sides a network benchmark talks to, behind one small interface (base, size, device,
mem_type, name; crc(), poison(), describe(), close()).

* `InprocPeer`: a second NIXL agent in this process (UCX loopback inside one process).
* `ProcessPeer`: `python -m kvbench.cluster.peer` in another process on this host; metadata through
  NIXL's listener on 127.0.0.1, control messages as NIXL notifications.
* `RemotePeer`: a peer a launcher started on another host (rank 0), reached by address.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kvbench.backends.nixl import desc_array, make_agent
from kvbench.memory.kinds import allocate
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.peers.mooncake_target import ANSWER as MOONCAKE_ANSWER
from kvbench.peers.mooncake_target import REFUSAL as MOONCAKE_REFUSAL
from kvbench.peers.mooncake_target import MooncakeTargets, segment_from
from kvbench.peers.protocol import (
    fetch_metadata,
    fill_region,
    last_line,
    on_free_port,
    region_crc,
    stderr_file,
    wait_for_metadata,
)


def connect_rail(agent, peer, timeout_s: float) -> None:
    """Give one more initiator agent (a rail) the peer's metadata: from the peer itself in this
    process, or from the peer's NIXL listener."""
    if isinstance(peer, InprocPeer):
        agent.add_remote_agent(peer.agent.get_agent_metadata())
        return
    address, port = peer.address
    if not fetch_metadata(agent, peer.name, address, port, time.monotonic() + timeout_s, retry_s=0.5):
        raise RuntimeError(f"rail agent {agent.name} got no metadata from '{peer.name}' within {timeout_s:.0f} s")


class InprocPeer:
    def __init__(self, initiator, size: int, memory: str, seed: int) -> None:
        self.agent = make_agent(f"{initiator.name}-target", ["UCX"], telemetry=False)
        self.name = self.agent.name
        self.region = allocate(memory, size)
        fill_region(self.region, seed)
        mem_type, base, device = nixl_memory(self.region)
        self.agent.register_memory(desc_array(np.array([base]), np.array([size]), device), mem_type)
        initiator.add_remote_agent(self.agent.get_agent_metadata())
        self.base, self.size, self.device, self.mem_type = base, size, device, mem_type

        self._mooncake = MooncakeTargets()

    def crc(self) -> int:
        return region_crc(self.region)

    def mooncake_segment(self, ask: bytes) -> str:
        """The segment of a Mooncake engine in this process that serves this peer's buffer."""
        return segment_from(self._mooncake.answer(self.region, ask), self.name)

    def poison(self) -> None:
        self.region.poison()

    def describe(self) -> dict:
        return {"peer": "inproc", **self.region.describe()}

    def close(self) -> None:
        self._mooncake.close()
        self.region.close()


class ProcessPeer:
    command = [sys.executable, "-m", "kvbench.cluster.peer"]  # what starts the far side

    def __init__(self, initiator, listen_port: int, size: int, memory: str, seed: int, timeout_s: float) -> None:
        self.initiator = initiator
        self.timeout_s = timeout_s
        self.name = f"{initiator.name}-peer"
        self.memory = memory
        self._inbox: list[bytes] = []

        def start(port: int) -> list[str]:
            """The peer listening on `port`, up to its BASE message (a peer whose port was taken exits)."""
            self.address = ("127.0.0.1", port)
            cmd = [*self.command, "--name", self.name, "--port", str(port), "--initiator", initiator.name,
                   "--initiator-addr", "127.0.0.1", "--initiator-port", str(listen_port), "--size", str(size),
                   "--memory", memory, "--seed", str(seed), "--timeout", str(timeout_s)]
            env = {k: v for k, v in os.environ.items() if k != "UCX_PROTO_INFO"}  # its tables would fill the pipe
            self.stderr = stderr_file()
            self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                            env={**env, "NIXL_LOG_LEVEL": "WARN"})
            try:
                return self._wait(lambda m: m.startswith(b"BASE:")).decode().split(":")[1:]
            except BaseException:
                self.close()
                raise

        base, size_, device, mem_type = on_free_port(start)[0]
        try:
            wait_for_metadata(initiator, self.name, timeout_s)
        except BaseException:
            self.close()
            raise
        self.base, self.size, self.device, self.mem_type = int(base), int(size_), int(device), mem_type

    def _wait(self, wanted) -> bytes:
        deadline = time.monotonic() + self.timeout_s
        while True:
            for message in self._inbox:
                if wanted(message):
                    self._inbox.remove(message)
                    return message
            self._inbox.extend(self.initiator.get_new_notifs().get(self.name, []))
            if self.process is not None and self.process.poll() is not None:
                tail = last_line(self.stderr)
                raise RuntimeError(f"peer process exited with status {self.process.returncode}"
                                   f"{': ' + tail if tail else ''}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"peer '{self.name}' did not answer within {self.timeout_s:.0f} s")
            time.sleep(0.001)

    def crc(self) -> int:
        self.initiator.send_notif(self.name, b"CRC?")
        return int(self._wait(lambda m: m.startswith(b"CRC:")).split(b":")[1])

    def poison(self) -> None:
        self.initiator.send_notif(self.name, b"POISON")
        self._wait(lambda m: m == b"POISONED")

    def mooncake_segment(self, ask: bytes) -> str:
        """The segment of the peer's Mooncake engine over its buffer (started on this ask)."""
        self.initiator.send_notif(self.name, ask)
        return segment_from(self._wait(lambda m: m.startswith((MOONCAKE_ANSWER, MOONCAKE_REFUSAL))), self.name)

    def describe(self) -> dict:
        return {"peer": "local", "kind": self.memory, "pid": self.process.pid, "size_bytes": self.size}

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.initiator.send_notif(self.name, b"BYE")
                self.process.wait(timeout=5)
            except Exception:
                self.process.kill()
                self.process.wait(timeout=5)
        self.stderr.close()
        # The peer inherited UCX_LOG_FILE (kvbench-ucx-<our pid>-%p.log in the temp folder): its own log goes too.
        template = os.environ.get("UCX_LOG_FILE", "")
        if "%p" in template and template.startswith(tempfile.gettempdir()):
            Path(template.replace("%p", str(self.process.pid))).unlink(missing_ok=True)


class RemotePeer(ProcessPeer):
    """A peer started elsewhere (rank 0 of a launcher) that waits for this side to connect.

    Metadata goes both ways through NIXL's listeners: this side fetches the peer's and sends its
    own, then waits for the peer's BASE notification.
    """

    def __init__(self, initiator, name: str, address: str, port: int, size: int, timeout_s: float,
                 ask: bool = False) -> None:
        """`ask`: ask the peer for a buffer of `size` bytes (`OPEN:<size>`, a KV pool); without it the
        peer's own buffer is used, and must hold exactly `size` bytes."""
        self.initiator = initiator
        self.timeout_s = timeout_s
        self.name = name
        self.memory = "remote"
        self.process = None
        self._inbox = []
        self.address = (address, port)
        # The peer may still be starting (launchers start ranks together): ask again until it answers.
        deadline = time.monotonic() + timeout_s
        if not fetch_metadata(initiator, name, address, port, deadline, send_own=True):
            raise RuntimeError(f"peer '{name}' at {address}:{port} did not answer within {timeout_s:.0f} s")
        # The peer serves whoever says OPEN (several initiators at once in an incast); it answers once
        # it holds this side's metadata, which may arrive after the OPEN.
        initiator.send_notif(name, f"OPEN:{size}".encode() if ask else b"OPEN")
        answer = self._wait(lambda m: m.startswith((b"BASE:", b"REFUSED:"))).decode(errors="replace")
        if answer.startswith("REFUSED:"):
            self.close()  # the peer holds nothing for this side: the BYE ends its session
            raise RuntimeError(f"peer '{name}' at {address}:{port} refused a buffer of {size} bytes: "
                               f"{answer[len('REFUSED:'):]}")
        base, size_, device, mem_type = answer.split(":")[1:]
        if int(size_) != size:
            self.close()  # the peer's session ends now: it waits for the next case, within its own timeout
            raise RuntimeError(f"peer '{name}' at {address}:{port} holds {size_} bytes; this case needs exactly {size} "
                               f"(start it with --size {size})")
        self.base, self.size, self.device, self.mem_type = int(base), int(size_), int(device), mem_type
        # The metadata fetched above may predate the peer's memory registration (its listener
        # answers as soon as its agent exists): fetch again until it names the peer's buffer.
        region = initiator.get_xfer_descs(desc_array(np.array([self.base]), np.array([self.size]), self.device),
                                          mem_type)
        if not fetch_metadata(initiator, name, address, port, deadline, region=region, retry_s=0.5):
            raise RuntimeError(f"peer '{name}' at {address}:{port} never published its buffer's metadata "
                               f"within {timeout_s:.0f} s")

    def describe(self) -> dict:
        return {"peer": "remote", "address": f"{self.address[0]}:{self.address[1]}", "size_bytes": self.size,
                "mem_type": self.mem_type}

    def close(self) -> None:
        try:
            self.initiator.send_notif(self.name, b"BYE")
        except Exception:
            pass
