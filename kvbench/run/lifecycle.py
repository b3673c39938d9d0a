"""Who owns a run, and what a later kvbench does about a run whose owner is gone.

SIGINT, SIGTERM and SIGHUP end a run in an orderly way (kvbench/run/interrupts.py). SIGKILL and the
OOM killer cannot be caught: the run stays `running`. So each run records its process (pid, boot
id, pid namespace, machine) and beats a heartbeat while it runs, and the next kvbench that writes
to the database (run, tag, host merge) marks such runs `crashed` and removes the temporary files
they left (their names carry the pid that made them):

* where the run's pid means the same process as here (the same boot id and pid namespace: a
  hostname proves nothing, containers share one), by that process being gone, or the pid now naming
  another process (its start time differs from the one the run recorded);
* on this box after a reboot (its host id and machine, another boot id);
* anywhere, by a heartbeat older than STALE_AFTER_S (a container that was killed, another box),
  whatever its pid says: fresh containers on one host reuse the pid-namespace id and start kvbench
  at the same small pid, so a dead run's pid can name the very kvbench that looks at it. A pid equal
  to the caller's own never counts as alive (only its recorded start time can say it is the caller).
  A run that was only suspended past the limit gets its status back when it finishes.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
HEARTBEAT_S = 30.0  # a running run says it is alive this often, whatever its case is doing
# a run silent this long is crashed: twenty missed beats, so a busy box or a slow database never
# costs a live run (and a fleet's clocks may disagree by minutes)
STALE_AFTER_S = 20 * HEARTBEAT_S
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


def process_start(pid: int | str = "self") -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat field 22): with the pid,
    the boot id and the pid namespace it names one process, a reused pid another."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner() -> dict[str, Any]:
    """This process, as a run records its owner."""
    return {"pid": os.getpid(), "boot_id": boot_id(), "machine": socket.gethostname()}


def alive(pid: int, started: int | None = None) -> bool:
    """A process `pid` runs here and is a kvbench (a reused pid of another program is not), and, where
    the run recorded when its process started (`started`, `process_start`), that very process."""
    if started is not None and process_start(pid) not in (None, started):
        return False
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


def same_process_space(run: dict[str, Any], me: dict[str, Any]) -> bool:
    """True when the run's pid names a process here: the same kernel boot and pid namespace. A
    hostname does not tell it (containers on one box share boot ids and may share a hostname; the
    first pid namespace has the same number on every box)."""
    namespace = (run.get("system_state") or {}).get("pid_namespace")
    return (run.get("boot_id") is not None and run["boot_id"] == me.get("boot_id")
            and namespace is not None and namespace == me.get("pid_namespace"))


def gone(run: dict[str, Any], me: dict[str, Any], my_host_ids: list[str] | None = None,
         now: datetime | None = None) -> str | None:
    """Why `run` (status running) can no longer be running, None if it may be.

    Its pid is judged only where it means the same process as here (`same_process_space`); a
    reboot only on this box (its host id and machine); and every run by its heartbeat, which a
    live-looking pid never outweighs (a container's kvbench can hold a dead run's pid)."""
    started = (run.get("system_state") or {}).get("pid_start")
    if run.get("pid") is not None and same_process_space(run, me):
        mine = run["pid"] == me["pid"]
        if mine and started is not None and me.get("pid_start") is not None and started != me["pid_start"]:
            return (f"its process {run['pid']} is gone: that pid is now this kvbench's own, started later "
                    "(a container's pid reused; found by a later kvbench)")
        if not mine and not alive(run["pid"], started):
            return (f"its process {run['pid']} is gone: killed (SIGKILL or the out-of-memory killer), or it "
                    "could not write to the database (found by a later kvbench)")
    elif _rebooted_here(run, me, my_host_ids):
        return "the machine rebooted while it ran (found by a later kvbench)"
    beat = run.get("heartbeat_at")
    if beat is not None:
        silent = ((now or datetime.now(UTC)) - beat).total_seconds()
        if silent > STALE_AFTER_S:
            return (f"no heartbeat for {silent / 60:.0f} min (a live run beats every {HEARTBEAT_S:.0f} s): its "
                    "process, container or machine is gone (found by a later kvbench)")
    return None


def _rebooted_here(run: dict[str, Any], me: dict[str, Any], my_host_ids: list[str] | None) -> bool:
    this_box = run.get("host_id") in (my_host_ids or []) and run.get("machine") == me.get("machine")
    return bool(this_box and run.get("boot_id") and me.get("boot_id") and run["boot_id"] != me["boot_id"])


@contextmanager
def heartbeat(store, run_id: int, every_s: float = HEARTBEAT_S) -> Iterator[None]:
    """Within the block, a thread beats run `run_id`'s heartbeat every `every_s` seconds, so a long
    case is never taken for a dead run. A beat that fails is left to the run's own writes to report."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            with suppress(Exception):
                store.beat(run_id)

    thread = threading.Thread(target=beat, name=f"kvbench-heartbeat-{run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every_s)  # a beat in flight gives its connection back before the store closes


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
    """Mark the runs whose owner is gone `crashed`, sweep the temporary files of those that ran here;
    the runs. `my_host_ids`: the ids this box's runs are stored under (see `gone`)."""
    me = {**owner(), "pid_namespace": pid_namespace(), "pid_start": process_start()}
    crashed: list[int] = []
    pids: set[int] = set()
    dirs = {tempfile.gettempdir()}
    for run in store.runs(status="running"):
        why = gone(run, me, my_host_ids)
        if why:
            store.mark_crashed([run["id"]], why)
            crashed.append(run["id"])
            # its files carry its pid: swept where that pid was this space's (not another namespace's)
            # (never a pid a live kvbench holds now: after a reboot the number may name another run's files)
            if run["pid"] is not None and (same_process_space(run, me) or _rebooted_here(run, me, my_host_ids)) \
                    and not alive(run["pid"]) and run["pid"] != me["pid"]:
                pids.add(run["pid"])
            dirs.update((run.get("system_state") or {}).get("temp_dirs") or [])
    if pids:
        sweep_temp_files(dirs, pids)
    return crashed
