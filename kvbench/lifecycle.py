"""Who owns a run, and what a later kvbench does about a run whose owner is gone.

SIGINT, SIGTERM and SIGHUP end a run in an orderly way (kvbench/interrupts.py). SIGKILL and the
OOM killer cannot be caught: the run stays `running`. So each run records its process (pid, boot
id, machine), and the next kvbench that writes to the database marks such runs `crashed` — the
process is gone, or the machine rebooted — and removes the temporary files they left (their names
carry the pid that made them).
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# files kvbench makes for a process: storage test files, and the UCX logs of that process and of
# the peer processes it started (kvbench-ucx-<its pid>-<writer's pid>.log)
TEMP_NAMES = (re.compile(r"^kvbench-(\d+)-\d+-.*\.dat$"), re.compile(r"^kvbench-ucx-(\d+)(?:-\d+)?\.log$"))


def boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


def pid_namespace() -> str | None:
    """This process's pid namespace (`pid:[4026531836]`): pids mean the same only within one."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def owner() -> dict[str, Any]:
    """This process, as a run records its owner."""
    return {"pid": os.getpid(), "boot_id": boot_id(), "machine": socket.gethostname()}


def alive(pid: int) -> bool:
    """A process `pid` runs here and is a kvbench (a reused pid of another program is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True
    return b"kvbench" in command


def gone(run: dict[str, Any], me: dict[str, Any], my_host_ids: list[str] | None = None) -> str | None:
    """Why `run` (status running) can no longer be running, None if it may be (or is elsewhere).

    A run is this machine's when its hostname is this one's, or when it was stored under this box's
    host id from this same pid namespace (a hostname renamed since); a container beside this one on
    the same box has its own pid namespace, so its live runs are never taken for dead ones."""
    if run.get("pid") is None:
        return None  # one an older kvbench began: nothing to tell here
    namespace = (run.get("system_state") or {}).get("pid_namespace")
    same_box = run.get("host_id") in (my_host_ids or []) and namespace is not None and namespace == me.get("pid_namespace")
    if run.get("machine") != me["machine"] and not same_box:
        return None  # another box's run, or another container's
    if run.get("boot_id") and me["boot_id"] and run["boot_id"] != me["boot_id"]:
        return "the machine rebooted while it ran (found by a later kvbench)"
    if run["pid"] != me["pid"] and not alive(run["pid"]):
        return f"its process {run['pid']} is gone: killed (SIGKILL or the out-of-memory killer) (found by a later kvbench)"
    return None


def sweep_temp_files(directories: set[str], pids: set[int]) -> list[str]:
    """Remove kvbench's temporary files of processes `pids` from `directories`; the paths removed."""
    removed = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            for pattern in TEMP_NAMES:
                match = pattern.match(name)
                if match and int(match.group(1)) in pids:
                    path = os.path.join(directory, name)
                    try:
                        os.unlink(path)
                        removed.append(path)
                    except OSError:
                        pass
    return removed


def reap(store, my_host_ids: list[str] | None = None) -> list[int]:
    """Mark this machine's runs whose owner is gone `crashed`, sweep their temporary files; the runs.
    `my_host_ids`: the ids this box's runs are stored under (see `gone`)."""
    me = {**owner(), "pid_namespace": pid_namespace()}
    crashed: list[int] = []
    pids: set[int] = set()
    dirs = {tempfile.gettempdir()}
    for run in store.runs(status="running"):
        why = gone(run, me, my_host_ids)
        if why:
            store.mark_crashed([run["id"]], why)
            crashed.append(run["id"])
            pids.add(run["pid"])
            dirs.update((run.get("system_state") or {}).get("temp_dirs") or [])
    if pids:
        sweep_temp_files(dirs, pids)
    return crashed
