"""`kvbench crosscheck storage`: fio next to `storage.read`, same directory, file size, I/O size,
depth (= kvbench's batch), libaio, O_DIRECT."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.measure.engine import Settings
from kvbench.run.interrupts import signals_deferred

FIO_GRACE_S = 120  # fio runs `seconds`; past that plus this it is taken for hung and killed
FIO_ENGINES = {"aio": "libaio", "uring": "io_uring"}


def fio_read(directory: str, file_bytes: int, io_size: int, depth: int, engine: str = "libaio",
             seconds: int = 5) -> Figure:
    exe = shutil.which("fio")
    if exe is None:
        return Figure("fio read", None, "skipped — fio is not installed (apt-get install fio)")
    fio, path = None, None
    try:
        with signals_deferred():  # a signal while the file is made or fio starts is raised once both are known
            fd, path = tempfile.mkstemp(prefix="kvbench-fio-", suffix=".dat", dir=directory)  # never another's
            os.close(fd)
            fio = subprocess.Popen(
                # --thread: one process, so killing fio leaves no job behind re-creating its file
                [exe, "--name=kvbench", "--thread", f"--filename={path}", "--rw=read", f"--bs={io_size}",
                 f"--iodepth={depth}", f"--ioengine={engine}", "--direct=1",
                 # kvbench posts `batch` I/Os as one request and waits for all of them: fio likewise
                 f"--iodepth_batch_submit={depth}", f"--iodepth_batch_complete_min={depth}", f"--size={file_bytes}",
                 f"--runtime={seconds}", "--time_based", "--invalidate=1", "--output-format=json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = fio.communicate(timeout=seconds + FIO_GRACE_S)
        except subprocess.TimeoutExpired as exc:
            return Figure("fio read", None, tool_timed_out(exc))  # killed below
        if fio.returncode != 0:
            return Figure("fio read", None, tool_failed(subprocess.CompletedProcess(fio.args, fio.returncode, stdout,
                                                                                    stderr)))
        job = json.loads(stdout)["jobs"][0]["read"]
        return Figure(f"fio read {engine}", job["bw_bytes"] / 1e9,
                      f"{engine}, depth {depth} submitted and reaped {depth} at a time, O_DIRECT, {job['iops']:.0f} IOPS")
    finally:
        if fio is not None and fio.poll() is None:  # ended by a signal or the timeout: fio goes first
            fio.kill()
            fio.communicate()
        if path is not None and os.path.exists(path):
            os.unlink(path)


def crosscheck_storage(io_size: int, depth: int, file_bytes: int, directory: str | None = None,
                       api: str = "aio") -> tuple[Figure, list[Figure]]:
    """kvbench through the NIXL POSIX engine `api` next to fio with the matching engine."""
    directory = directory or tempfile.gettempdir()
    params = {"io_size": io_size, "batch": depth, "file_size": file_bytes, "path": directory, "api": api}
    result = run_kvbench("storage.read", params, Settings(samples=7, min_sample_s=0.2))
    if result.status != "ok":
        ours = Figure("kvbench storage.read", None, f"{result.status}: {result.reason}")
    else:
        meta = result.metadata
        ours = Figure("kvbench storage.read", result.gbps["median"],
                      f"NIXL {meta['nixl_backend']} api={api}, batch {depth}, "
                      f"{'O_DIRECT' if meta['direct'] else 'page cache'}, {meta['iops']:.0f} IOPS")
    return ours, [fio_read(directory, file_bytes, io_size, depth, FIO_ENGINES[api])]
