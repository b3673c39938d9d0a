"""`kvbench crosscheck net`: ucx_perftest (ucp_put_bw) on loopback next to `net.write peer=local`.

ucx_perftest puts one message-sized buffer again and again (it stays in cache), so kvbench is
shown twice: with one descriptor of the same size (like for like) and with 64 of them (a
64-block working set that does not fit in cache). UCX picks transports by memory: buffers it
allocates itself (ucx_perftest) can go through shared memory, buffers registered from outside
(NIXL's) through CMA; `tls` forces one set of transports on both sides (UCX_TLS).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.measure.engine import Settings
from kvbench.peers.protocol import free_port

PERFTEST_TIMEOUT_S = 120  # the client's bound: a server it cannot reach can leave it waiting for ever
_FINAL = re.compile(r"^Final:\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)


def ucx_perftest_put(size_bytes: int, iterations: int, env: dict[str, str]) -> Figure:
    exe = shutil.which("ucx_perftest")
    if exe is None:
        return Figure("ucx_perftest ucp_put_bw", None, "skipped — ucx_perftest is not installed (apt-get install ucx-utils)")
    port = free_port()
    server = subprocess.Popen([exe, "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        time.sleep(0.5)
        client = subprocess.run([exe, "127.0.0.1", "-p", str(port), "-t", "ucp_put_bw", "-s", str(size_bytes),
                                 "-n", str(iterations)], capture_output=True, text=True, timeout=PERFTEST_TIMEOUT_S,
                                env=env)
    except subprocess.TimeoutExpired as exc:
        return Figure("ucx_perftest ucp_put_bw", None, tool_timed_out(exc))
    finally:
        server.kill()
        server.wait(timeout=10)
    match = _FINAL.search(client.stdout)
    if not match:
        return Figure("ucx_perftest ucp_put_bw", None, tool_failed(client))
    # ucx_perftest's MB is 2**20 bytes
    return Figure(f"ucx_perftest put {size_bytes >> 10}KiB", float(match.group(5)) * 2**20 / 1e9,
                  f"one {size_bytes >> 10} KiB buffer reused, {match.group(3)} µs per message")


def kvbench_write(size_bytes: int, batch: int) -> Figure:
    result = run_kvbench("net.write", {"peer": "local", "block_size": size_bytes, "batch": batch},
                         Settings(samples=7, min_sample_s=0.1))
    name = f"kvbench net.write {size_bytes >> 10}KiB x {batch}"
    if result.status != "ok":
        return Figure(name, None, f"{result.status}: {result.reason}")
    telemetry = result.metadata.get("telemetry") or {}
    if isinstance(telemetry, list):  # net.write records one entry per rail
        telemetry = telemetry[0] if telemetry and telemetry[0] else {}
    return Figure(name, result.gbps["median"],
                  f"NIXL {result.metadata['nixl_backend']}, peer process; post {telemetry.get('post_us', '?')} µs")


def crosscheck_net(sizes: tuple[int, ...] = (1 << 20, 64 << 10), tls: str | None = None,
                   iterations: int | None = None) -> list[tuple[Figure, list[Figure]]]:
    """Pairs of (kvbench, [ucx_perftest]) per size and batch; `tls` sets UCX_TLS for both sides."""
    saved = os.environ.get("UCX_TLS")
    if tls:
        os.environ["UCX_TLS"] = tls  # the peer process and this process's UCX read it at start
    try:
        out = []
        for size in sizes:
            peer = ucx_perftest_put(size, iterations or max(1000, (2 << 30) // size), dict(os.environ))
            out.append((kvbench_write(size, 1), [peer]))
            out.append((kvbench_write(size, 64), [peer]))
        return out
    finally:
        if tls:
            if saved is None:
                os.environ.pop("UCX_TLS", None)
            else:
                os.environ["UCX_TLS"] = saved
