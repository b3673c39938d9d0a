"""DRAM modules from DMI (`dmidecode -t memory`), which needs root; otherwise a reason."""

from __future__ import annotations

import re
import shutil
import subprocess

from kvbench.hardware.facts import Dram

_SIZE_UNITS = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


# Where a module sits, as vendors write it: (field, pattern, key of the channel from the match).
_CHANNEL_FORMS = (
    ("Bank Locator", re.compile(r"P(\d+)[ _-]*CHANNEL[ _-]*([A-Z0-9]+)", re.I), lambda m: f"{m[1]}:{m[2]}"),  # AMD: P0 CHANNEL A
    ("Bank Locator", re.compile(r"(?:P(\d+)[ _-]*)?NODE(\d+)[ _-]*CHANNEL(\d+)", re.I),
     lambda m: f"{m[1]}:{m[2]}:{m[3]}"),  # P0_Node0_Channel0_Dimm0
    ("Locator", re.compile(r"(?:CPU|PROC|SOCKET|P)(\d+)[ _-]*DIMM[ _-]*([A-Z])\d+$", re.I),
     lambda m: f"{m[1]}:{m[2].upper()}"),  # CPU0_DIMM_A1, P1-DIMMB2
    ("Locator", re.compile(r"^DIMM[ _-]*([A-Z])\d+$", re.I), lambda m: m[1].upper()),  # DIMM_A1
)


def channel_of(block: str) -> str | None:
    """The memory channel a DMI memory device sits on (socket and channel), None when its locators
    follow no known form: modules A1 and A2 share channel A, whose bus they split."""
    for field, pattern, key in _CHANNEL_FORMS:
        value = re.search(rf"^\s*{field}:\s*(.+?)\s*$", block, re.M)
        if value and (match := pattern.search(value.group(1))):
            return key(match)
    return None


def parse_dmidecode(text: str) -> Dram:
    """Populated modules, the channels they populate, their configured speed (MT/s, the slowest)
    and total size."""
    modules, speeds, total, channels = 0, [], 0, set()
    unplaced = []
    for block in text.split("\n\n"):
        if "Memory Device" not in block:
            continue
        size = re.search(r"^\s*Size:\s*(\d+)\s*(KB|MB|GB|TB)", block, re.M)
        if not size:
            continue  # "No Module Installed"
        modules += 1
        total += int(size.group(1)) * _SIZE_UNITS[size.group(2)]
        channel = channel_of(block)
        if channel is None:
            locator = re.search(r"^\s*Locator:\s*(.+?)\s*$", block, re.M)
            unplaced.append(locator.group(1) if locator else "?")
        else:
            channels.add(channel)
        speed = re.search(r"^\s*Configured (?:Memory|Clock) Speed:\s*(\d+)\s*MT/s", block, re.M) or re.search(
            r"^\s*Speed:\s*(\d+)\s*MT/s", block, re.M)
        if speed:
            speeds.append(int(speed.group(1)))
    if modules == 0:
        return Dram(None, None, None, reason="DMI lists no populated memory module (virtual machine?)")
    if not speeds:
        return Dram(modules, None, total, reason="DMI gives no memory speed")
    if unplaced:
        return Dram(modules, min(speeds), total, channels=None,
                    reason=f"memory channels unknown: locator '{unplaced[0]}' names no channel kvbench can read")
    return Dram(modules, min(speeds), total, channels=len(channels))


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
