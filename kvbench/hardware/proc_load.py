"""What else the host's CPUs did while a case ran, read from /proc before and after it.

Two snapshots (`snapshot`), one difference (`host_load`): steal and iowait from /proc/stat's
jiffies, stall time from /proc/pressure (PSI), the CPU time of every process outside this one's
family, the load average and runnable tasks at the end, and the CPU clocks where cpufreq is
readable. `root` points at a recorded tree in tests (a fake /proc and /sys), so nothing here
depends on the machine being busy or idle. A file that cannot be read leaves its facts out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc's jiffies (USER_HZ)
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal (guest time is inside user)
_USER, _NICE, _SYSTEM, _IDLE, _IOWAIT, _IRQ, _SOFTIRQ, _STEAL = range(8)
_PRESSURE = (("cpu", "some"), ("memory", "some"), ("memory", "full"), ("io", "some"), ("io", "full"))
_BUSIEST = 3  # other processes named in a record


@dataclass(frozen=True)
class Process:
    name: str
    ppid: int
    ticks: int  # utime + stime, jiffies
    children_ticks: int  # cutime + cstime: children it has waited for, jiffies
    started: int = 0  # start time after boot, jiffies: a reused pid is another process


@dataclass(frozen=True)
class Snapshot:
    at_s: float  # the caller's monotonic clock, seconds
    jiffies: tuple[int, ...] | None  # the aggregate cpu line of /proc/stat
    pressure_us: dict[str, int] = field(default_factory=dict)  # "cpu.some" -> PSI total, µs
    processes: dict[int, Process] = field(default_factory=dict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _stat_lines(root: str) -> dict[str, list[str]]:
    text = _read(Path(root, "proc/stat")) or ""
    return {parts[0]: parts[1:] for parts in (line.split() for line in text.splitlines()) if parts}


def _jiffies(lines: dict[str, list[str]]) -> tuple[int, ...] | None:
    values = lines.get("cpu")
    try:
        return tuple(int(v) for v in values[:8]) if values and len(values) >= 8 else None
    except ValueError:
        return None


def _pressure(root: str) -> dict[str, int]:
    out = {}
    for resource in sorted({r for r, _ in _PRESSURE}):
        for line in (_read(Path(root, "proc/pressure", resource)) or "").splitlines():
            kind, _, rest = line.partition(" ")
            total = next((f.split("=", 1)[1] for f in rest.split() if f.startswith("total=")), None)
            if total is not None and total.isdigit():
                out[f"{resource}.{kind}"] = int(total)
    return out


def _process(text: str) -> Process | None:
    """/proc/PID/stat: the name sits in parentheses and may hold spaces or parentheses itself."""
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    try:
        return Process(head.partition("(")[2], int(fields[1]), int(fields[11]) + int(fields[12]),
                       int(fields[13]) + int(fields[14]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def _processes(root: str) -> dict[int, Process]:
    out = {}
    try:
        entries = [e for e in os.listdir(Path(root, "proc")) if e.isdigit()]
    except OSError:
        return out
    for pid in entries:
        text = _read(Path(root, "proc", pid, "stat"))
        process = _process(text) if text else None
        if process is not None:
            out[int(pid)] = process
    return out


def snapshot(at_s: float, root: str = "/") -> Snapshot:
    """The counters now; `at_s` is the caller's monotonic time in seconds."""
    return Snapshot(at_s, _jiffies(_stat_lines(root)), _pressure(root), _processes(root))


def family(processes: dict[int, Process], pid: int) -> set[int]:
    """`pid` and every live descendant of it (the peers and tools a case starts)."""
    members, grew = {pid}, True
    while grew:
        grown = members | {p for p, proc in processes.items() if proc.ppid in members}
        grew, members = grown != members, grown
    return members


def _own_ticks(before: Snapshot, after: Snapshot, mine: set[int], own_pid: int) -> int:
    """CPU jiffies this process and its children spent between the snapshots."""
    total = 0
    for pid in mine:
        now = after.processes.get(pid)
        if now is None:
            continue
        then = before.processes.get(pid)
        then = then if then is not None and then.started == now.started else None
        total += now.ticks - (then.ticks if then else 0)
        if pid == own_pid:  # children it waited for are added to the parent's cutime
            total += now.children_ticks - (then.children_ticks if then else 0)
    return max(total, 0)


def _busiest(before: Snapshot, after: Snapshot, mine: set[int], seconds: float) -> list[dict[str, Any]]:
    used = []
    for pid, now in after.processes.items():
        if pid in mine:
            continue
        then = before.processes.get(pid)
        ticks = now.ticks - (then.ticks if then and then.started == now.started else 0)  # a kworker's name changes
        if ticks > 0:
            used.append((ticks, pid, now.name))
    used.sort(reverse=True)
    return [{"pid": pid, "name": name, "cpus": round(ticks / TICKS_PER_S / seconds, 3)}
            for ticks, pid, name in used[:_BUSIEST]]


def _end_state(root: str) -> dict[str, Any]:
    """Load average, runnable tasks and CPU clocks as the case ends."""
    out: dict[str, Any] = {}
    load = (_read(Path(root, "proc/loadavg")) or "").split()
    try:
        out["load_1m"] = float(load[0])
    except (IndexError, ValueError):
        pass
    lines = _stat_lines(root)
    if lines.get("procs_running"):
        out["runnable"] = int(lines["procs_running"][0])
    out["cpus"] = sum(1 for name in lines if name.startswith("cpu") and name[3:].isdigit()) or None
    khz = [int(t) for t in (_read(p) for p in Path(root, "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
           if t and t.strip().isdigit()]
    if khz:
        out["cpu_mhz"] = {"mean": round(sum(khz) / len(khz) / 1000), "min": min(khz) // 1000}
        top = _read(Path(root, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))
        if top and top.strip().isdigit():
            out["cpu_mhz"]["max"] = int(top) // 1000
    return {k: v for k, v in out.items() if v is not None}


def host_load(before: Snapshot, after: Snapshot, own_pid: int | None = None, root: str = "/") -> dict[str, Any]:
    """What the host did between two snapshots, as fractions of the CPUs' time (0–1) or of wall time.

    `others_cpu_fraction`: CPU time of everything but this process and its children (kernel and
    interrupts included, and processes that started or ended meanwhile), over all CPUs' time;
    `others_cpus` the same in CPUs kept busy. `steal_fraction` and `iowait_fraction` from
    /proc/stat; `pressure` from PSI: the share of wall time some (or all) tasks were stalled on
    that resource. `busiest_others`: the processes that used most CPU, in CPUs.
    """
    seconds = after.at_s - before.at_s
    out: dict[str, Any] = {"seconds": round(seconds, 3), **_end_state(root)}
    own_pid = os.getpid() if own_pid is None else own_pid
    mine = family(after.processes, own_pid)
    if before.jiffies and after.jiffies:
        delta = [a - b for a, b in zip(after.jiffies, before.jiffies)]
        total = sum(delta)
        if total > 0:
            busy = delta[_USER] + delta[_NICE] + delta[_SYSTEM] + delta[_IRQ] + delta[_SOFTIRQ]
            others = max(busy - _own_ticks(before, after, mine, own_pid), 0) / total
            out["steal_fraction"] = round(delta[_STEAL] / total, 4)
            out["iowait_fraction"] = round(delta[_IOWAIT] / total, 4)
            out["others_cpu_fraction"] = round(others, 4)
            if out.get("cpus"):
                out["others_cpus"] = round(others * out["cpus"], 3)
    if seconds > 0:
        stalls = {f"{r}_{k}": min((after.pressure_us[f"{r}.{k}"] - before.pressure_us[f"{r}.{k}"]) / (seconds * 1e6), 1.0)
                  for r, k in _PRESSURE if f"{r}.{k}" in before.pressure_us and f"{r}.{k}" in after.pressure_us}
        if stalls:
            out["pressure"] = {k: round(max(v, 0.0), 4) for k, v in stalls.items()}
        busiest = _busiest(before, after, mine, seconds)
        if busiest:
            out["busiest_others"] = busiest
    return out
