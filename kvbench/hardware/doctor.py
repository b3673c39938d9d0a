"""`kvbench doctor`: what to fix on this box before an acceptance run, as `pyperf system show` does.

Each check is one small object with `check(box)`, returning a `Finding`: `ok`, `fix` (it will
bend the numbers: fix it before an acceptance run), `advice` (a source of run-to-run variance
worth removing, not a fault) or `n/a` (not readable here, with why). `Box` carries where to read
(a recorded tree in tests), the NVML module (None without a driver) and how to wait while the
background load is sampled. The limits are contention's (`kvbench/hardware/contention.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from kvbench.hardware import contention, nvml_watch, proc_load
from kvbench.hardware.nvml import call, text
from kvbench.overall import Overall, decide

SWAP_USED_MAX_BYTES = 64 * 2**20  # a few pages swapped out is history; more is memory a benchmark may fault back in


@dataclass(frozen=True)
class Finding:
    check: str
    state: str  # ok | fix | advice | n/a
    seen: str  # what was read, in words
    todo: str = ""  # what to do about it (fix, advice), or why it could not be read (n/a)


@dataclass
class Box:
    root: str = "/"
    nvml: ModuleType | None = None
    seconds: float = 2.0  # the background-load window
    wait: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    own_pid: int | None = None


def _read(box: Box, *path: str) -> str | None:
    try:
        return Path(box.root, *path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _cpus(box: Box) -> list[str]:
    """The CPU directories' names under sysfs, in number order (cpu0, cpu1, ...)."""
    found = Path(box.root, "sys/devices/system/cpu").glob("cpu[0-9]*")
    return sorted((p.name for p in found), key=lambda name: int(name[3:]))


class Check:
    name: ClassVar[str]

    def check(self, box: Box) -> Finding:
        raise NotImplementedError


class Governor(Check):
    name = "CPU governor"

    def check(self, box: Box) -> Finding:
        found: dict[str, list[str]] = {}
        for cpu in _cpus(box):
            governor = _read(box, "sys/devices/system/cpu", cpu, "cpufreq/scaling_governor")
            if governor:
                found.setdefault(governor, []).append(cpu[3:])
        if not found:
            return Finding(self.name, "n/a", "no cpufreq in sysfs", "the clocks are the hypervisor's or firmware's")
        seen = ", ".join(f"{g} on CPU {','.join(cpus)}" for g, cpus in sorted(found.items()))
        if set(found) == {"performance"}:
            return Finding(self.name, "ok", seen)
        return Finding(self.name, "fix", seen, "cpupower frequency-set -g performance: other governors lower the "
                       "clocks between samples")


class Turbo(Check):
    name = "turbo / boost"

    def check(self, box: Box) -> Finding:
        no_turbo = _read(box, "sys/devices/system/cpu/intel_pstate/no_turbo")
        boost = _read(box, "sys/devices/system/cpu/cpufreq/boost")
        if no_turbo is None and boost is None:
            return Finding(self.name, "n/a", "neither intel_pstate/no_turbo nor cpufreq/boost", "")
        on = no_turbo == "0" if no_turbo is not None else boost == "1"
        seen = "on" if on else "off"
        return (Finding(self.name, "advice", seen, "turbo follows temperature and the other cores' load: turn it off "
                        "(intel_pstate/no_turbo=1 or cpufreq/boost=0) for steadier CPU-bound results")
                if on else Finding(self.name, "ok", seen))


class BackgroundLoad(Check):
    name = "background load"

    def check(self, box: Box) -> Finding:
        start = box.clock()
        before = proc_load.snapshot(start, box.root)
        box.wait(box.seconds)
        after = proc_load.snapshot(box.clock(), box.root)
        if before.jiffies is None:
            return Finding(self.name, "n/a", "/proc/stat unreadable", "")
        host = proc_load.host_load(before, after, box.own_pid, box.root)
        seen = (f"over {host['seconds']:.1f} s: others {host.get('others_cpu_fraction', 0):.0%} of the CPUs, steal "
                f"{host.get('steal_fraction', 0):.0%}, load {host.get('load_1m', 0):.2f} on {host.get('cpus', '?')} CPUs")
        reasons = contention.contended(host, {})
        if reasons:
            return Finding(self.name, "fix", seen, "; ".join(reasons) + ": stop them or run elsewhere")
        return Finding(self.name, "ok", seen)


class Swap(Check):
    name = "swap"

    def check(self, box: Box) -> Finding:
        meminfo = {}
        for line in (_read(box, "proc/meminfo") or "").splitlines():
            key, _, value = line.partition(":")
            if value.split() and value.split()[0].isdigit():
                meminfo[key] = int(value.split()[0]) * 1024
        if "SwapTotal" not in meminfo:
            return Finding(self.name, "n/a", "/proc/meminfo unreadable", "")
        used = meminfo["SwapTotal"] - meminfo.get("SwapFree", 0)
        seen = f"{used / 2**20:.0f} MiB used of {meminfo['SwapTotal'] / 2**20:.0f} MiB"
        if used > SWAP_USED_MAX_BYTES:
            return Finding(self.name, "fix", seen, "memory is short: pages fault back in during a case; free memory "
                           "(swapoff -a && swapon -a once it fits)")
        return Finding(self.name, "ok", seen)


class CpuThrottling(Check):
    name = "CPU thermal throttling"

    def check(self, box: Box) -> Finding:
        counts = [int(t) for cpu in _cpus(box)
                  if (t := _read(box, "sys/devices/system/cpu", cpu, "thermal_throttle/core_throttle_count")) and t.isdigit()]
        if not counts:
            return Finding(self.name, "n/a", "no thermal_throttle counters in sysfs", "")
        if sum(counts):
            return Finding(self.name, "advice", f"{sum(counts)} throttle event(s) since boot",
                           "the CPUs have overheated before: check cooling; a case that throttles says so")
        return Finding(self.name, "ok", "no throttle events since boot")


class Gpus(Check):
    name = "GPUs"

    def check(self, box: Box) -> Finding:
        nv = box.nvml
        if nv is None:
            return Finding(self.name, "n/a", "no NVML", "no NVIDIA driver or nvidia-ml-py")
        problems, advice, seen = [], [], []
        for i in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(i)
            pci = call(nv.nvmlDeviceGetPciInfo, handle)
            bus = text(pci.busId) if pci is not None else str(i)
            watch = nvml_watch.Watch(nv, {bus: handle})
            facts = nvml_watch.finish(watch, 0.0, {box.own_pid} if box.own_pid else set())[bus]
            problems += contention.contended({}, {bus: facts})
            if call(nv.nvmlDeviceGetPersistenceMode, handle) == 0:
                advice.append(f"GPU {bus}: persistence mode off (nvidia-smi -pm 1: the driver reloads between runs)")
            seen.append(f"{bus} {facts.get('temperature_c', '?')} °C")
        if problems:
            return Finding(self.name, "fix", "; ".join(seen), "; ".join(problems))
        if advice:
            return Finding(self.name, "advice", "; ".join(seen), "; ".join(advice))
        return Finding(self.name, "ok", "; ".join(seen) or "no GPUs")


CHECKS: tuple[Check, ...] = (Governor(), Turbo(), BackgroundLoad(), Swap(), CpuThrottling(), Gpus())


def run_checks(box: Box, checks: tuple[Check, ...] = CHECKS) -> list[Finding]:
    """Every check's finding; a check that breaks is `n/a` with its error, never an exception."""
    out = []
    for check in checks:
        try:
            out.append(check.check(box))
        except Exception as exc:
            out.append(Finding(check.name, "n/a", "could not be read", f"{type(exc).__name__}: {exc}"))
    return out


def needs_fixing(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.state == "fix"]


def verdict(findings: list[Finding]) -> Overall:
    """FAIL naming each check to fix, else PASS: `advice` and `n/a` never fail a box."""
    fixes = [f"{f.check}: {f.todo}" for f in needs_fixing(findings)]
    return decide(fixes, [], ["nothing to fix before an acceptance run"])
