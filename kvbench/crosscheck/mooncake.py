"""`kvbench crosscheck net --transport mooncake`: Mooncake's own `transfer_engine_bench` (shipped in
the wheel, beside its engine) next to `net.write transport=mooncake peer=local`, on 127.0.0.1 over
TCP with the P2P handshake, at the same block size, batch and submitting threads (one: kvbench
submits one batch and waits for it).

The tool writes blocks for a fixed wall-clock window and checks no byte; kvbench's figure comes from
its checked case. The tool's rate is taken from its own closing line (batches done, duration), in
decimal GB/s like kvbench's.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from kvbench.benches.transport import cuda_runtime_folder, mooncake_unavailable_reason
from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.measure.engine import Settings

TOOL = "transfer_engine_bench"
GOAL, GOAL_MAX = 0.90, 1.10  # kvbench / transfer_engine_bench: within 10 % either way
_LISTENING = re.compile(r"P2P handshake, listening on ([\d.]+):(\d+)")
_DONE = re.compile(r"Test completed: duration ([\d.]+), batch count (\d+), throughput")
START_S = 60  # the target's bound for saying where it listens


def tool_path() -> str | None:
    """The wheel's transfer_engine_bench binary (not its Python wrapper), else one on PATH."""
    spec = importlib.util.find_spec("mooncake")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / TOOL
        if path.is_file():
            return str(path)
    return shutil.which(TOOL)


def tool_env() -> dict[str, str]:
    """This environment with pip's CUDA runtime on the loader path (the tool links it; the CUDA
    driver it also links must be the host's own)."""
    env = dict(os.environ)
    runtime = cuda_runtime_folder()
    if runtime:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (runtime, env.get("LD_LIBRARY_PATH")) if p)
    return env


def _target_port(target: subprocess.Popen, log: Path, deadline: float) -> int | None:
    while time.monotonic() < deadline and target.poll() is None:
        found = _LISTENING.search(log.read_text(errors="replace"))
        if found:
            return int(found.group(2))
        time.sleep(0.1)
    return None


def transfer_engine_bench(block: int, batch: int, threads: int, duration_s: int, folder: Path) -> Figure:
    name = f"{TOOL} write {block >> 10}KiB x {batch}"
    exe = tool_path()
    if exe is None:
        return Figure(name, None, f"skipped — {TOOL} is not shipped in the installed Mooncake wheel, nor on PATH")
    env = tool_env()
    buffer = max(1 << 27, 2 * block * batch * threads)  # room for every thread's batch (the tool takes 96 MiB at least)
    common = ["--metadata_server=P2PHANDSHAKE", "--protocol=tcp", "--use_vram=false", f"--buffer_size={buffer}"]
    log = folder / "target.log"
    with open(log, "wb") as out:
        target = subprocess.Popen([exe, "--mode=target", "--local_server_name=127.0.0.1", *common], stdout=out,
                                  stderr=subprocess.STDOUT, env={**env, "MC_LOG_LEVEL": "INFO"})
    try:
        port = _target_port(target, log, time.monotonic() + START_S)
        if port is None:
            tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
            return Figure(name, None, f"failed: its target did not say where it listens within {START_S} s"
                          + (f"; {tail[-1][:160]}" if tail else ""))
        try:
            run = subprocess.run([exe, "--mode=initiator", "--local_server_name=127.0.0.1",
                                  f"--segment_id=127.0.0.1:{port}", *common, "--operation=write",
                                  f"--block_size={block}", f"--batch_size={batch}", f"--threads={threads}",
                                  f"--duration={duration_s}"], capture_output=True, text=True,
                                 env={**env, "MC_LOG_LEVEL": "INFO"},  # its closing line is logged at INFO
                                 timeout=duration_s + 120)
        except subprocess.TimeoutExpired as exc:
            return Figure(name, None, tool_timed_out(exc))
        done = _DONE.search(run.stderr + run.stdout)
        if run.returncode != 0 or not done:
            return Figure(name, None, tool_failed(run))
        seconds, batches = float(done.group(1)), int(done.group(2))
        return Figure(name, batches * batch * block / seconds / 1e9,
                      f"{threads} thread(s), {batches} batches in {seconds:.2f} s, bytes not checked")
    finally:
        target.kill()
        target.wait(timeout=10)


def kvbench_write(block: int, batch: int) -> Figure:
    name = f"kvbench net.write transport=mooncake {block >> 10}KiB x {batch}"
    result = run_kvbench("net.write", {"peer": "local", "transport": "mooncake", "block_size": block, "batch": batch},
                         Settings(samples=7, min_sample_s=0.1))
    if result.status != "ok":
        return Figure(name, None, f"{result.status}: {result.reason}")
    return Figure(name, result.gbps["median"], "Mooncake tcp, P2P handshake, peer process, every byte checked")


def crosscheck_mooncake(sizes: tuple[int, ...], batch: int, duration_s: int,
                        folder: Path) -> list[tuple[Figure, list[Figure]]]:
    """(kvbench, [transfer_engine_bench]) per block size; both INCOMPLETE with the reason where
    Mooncake's engine cannot load here."""
    reason = mooncake_unavailable_reason()
    out = []
    for size in sizes:
        if reason:
            out.append((Figure(f"kvbench net.write transport=mooncake {size >> 10}KiB x {batch}", None,
                               f"skipped: {reason}"), [Figure(f"{TOOL} write", None, f"skipped: {reason}")]))
            continue
        ours = kvbench_write(size, batch)
        out.append((ours, [transfer_engine_bench(size, batch, 1, duration_s, folder)]))
    return out
