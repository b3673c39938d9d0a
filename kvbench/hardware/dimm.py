"""DRAM modules from DMI (`dmidecode -t memory`), which needs root; otherwise a reason."""

from __future__ import annotations

import re
import shutil
import subprocess

from kvbench.hardware.facts import Dram

_SIZE_UNITS = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_dmidecode(text: str) -> Dram:
    """Populated modules, their configured speed (MT/s, the slowest) and total size."""
    modules, speeds, total = 0, [], 0
    for block in text.split("\n\n"):
        if "Memory Device" not in block:
            continue
        size = re.search(r"^\s*Size:\s*(\d+)\s*(KB|MB|GB|TB)", block, re.M)
        if not size:
            continue  # "No Module Installed"
        modules += 1
        total += int(size.group(1)) * _SIZE_UNITS[size.group(2)]
        speed = re.search(r"^\s*Configured (?:Memory|Clock) Speed:\s*(\d+)\s*MT/s", block, re.M) or re.search(
            r"^\s*Speed:\s*(\d+)\s*MT/s", block, re.M)
        if speed:
            speeds.append(int(speed.group(1)))
    if modules == 0:
        return Dram(None, None, None, reason="DMI lists no populated memory module (virtual machine?)")
    if not speeds:
        return Dram(modules, None, total, reason="DMI gives no memory speed")
    return Dram(modules, min(speeds), total)


def read_dram() -> Dram:
    exe = shutil.which("dmidecode")
    if exe is None:
        return Dram(None, None, None, reason="dmidecode is not installed")
    try:
        out = subprocess.run([exe, "-t", "memory"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Dram(None, None, None, reason=f"dmidecode failed: {exc}")
    if out.returncode != 0:
        return Dram(None, None, None, reason=f"dmidecode failed: {out.stderr.strip().splitlines()[:1]}")
    return parse_dmidecode(out.stdout)
