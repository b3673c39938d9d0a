"""How much host memory a benchmark may take now, and what that figure rests on.

Three things bound it, and kvbench takes the tightest that applies:

* `MemAvailable` (/proc/meminfo): what the kernel can hand out without swapping.
* A VM whose guest RAM grows on demand (a balloon that deflates as the guest uses memory, as on
  the Firecracker GPU host) starts with a MemTotal and MemAvailable far below its RAM. Its
  firmware memory map still lists all of it (`/sys/firmware/memmap`, type "System RAM"), so
  there the headroom is that RAM less what is in use now.
* A cgroup limit (v2 `memory.max`, v1 `memory.limit_in_bytes`, up the hierarchy): a container
  gets OOM-killed at its limit whatever the host has free. Reclaimable page cache
  (inactive_file) does not count as used.

Where the memory map does not show it, a VM can still grow as it is used: a virtio balloon or
virtio-mem device bound, or memory blocks offline (hotplug). `growable_memory` says which, so a
refusal can say that memory may still be granted, and the guard retries once after touching what
is free (a balloon deflates, blocks come online), instead of failing a command that passes a minute
later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

UNLIMITED = 1 << 60  # cgroup v1 says 9223372036854771712 for "no limit"


@dataclass(frozen=True)
class HostMemory:
    """`available_bytes` a benchmark may allocate (None: unknown), and `basis`, what it rests on."""

    available_bytes: int | None
    basis: str


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def meminfo(root: str = "/") -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out = {}
    for line in (_read(Path(root, "proc/meminfo")) or "").splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def firmware_ram_bytes(root: str = "/") -> int | None:
    """The RAM the firmware handed the kernel at boot ("System RAM" in /sys/firmware/memmap)."""
    base = Path(root, "sys/firmware/memmap")
    total = 0
    for entry in base.iterdir() if base.is_dir() else []:
        if (_read(entry / "type") or "").strip() != "System RAM":
            continue
        try:
            total += int((_read(entry / "end") or "0").strip(), 16) - int((_read(entry / "start") or "0").strip(), 16) + 1
        except ValueError:
            continue
    return total or None


def _cgroup_dirs(root: str) -> list[tuple[Path, str]]:
    """(folder, version) of this process's memory cgroup and of each ancestor, innermost first."""
    dirs: list[tuple[Path, str]] = []
    for line in (_read(Path(root, "proc/self/cgroup")) or "").splitlines():
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0" and controllers == "":
            mount, version = Path(root, "sys/fs/cgroup"), "v2"
        elif "memory" in controllers.split(","):
            mount, version = Path(root, "sys/fs/cgroup/memory"), "v1"
        else:
            continue
        parts = [p for p in path.strip().split("/") if p]
        for depth in range(len(parts), -1, -1):
            folder = mount.joinpath(*parts[:depth])
            if folder.is_dir():
                dirs.append((folder, version))
    return dirs


def _int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def _stat(folder: Path, key: str) -> int:
    for line in (_read(folder / "memory.stat") or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def cgroup_headroom(root: str = "/") -> tuple[int, str] | None:
    """(bytes left under the tightest memory cgroup limit, which limit), None without a limit."""
    best: tuple[int, str] | None = None
    for folder, version in _cgroup_dirs(root):
        if version == "v2":
            limit, used = _int(_read(folder / "memory.max")), _int(_read(folder / "memory.current"))
            reclaimable = _stat(folder, "inactive_file")
            name = f"cgroup {folder.name or '/'} memory.max"
        else:
            limit, used = _int(_read(folder / "memory.limit_in_bytes")), _int(_read(folder / "memory.usage_in_bytes"))
            reclaimable = _stat(folder, "total_inactive_file")
            name = f"cgroup {folder.name or '/'} memory.limit_in_bytes"
        if limit is None or limit >= UNLIMITED:
            continue
        left = max(0, limit - max(0, (used or 0) - reclaimable))
        if best is None or left < best[0]:
            best = (left, f"{name} {limit} bytes")
    return best


def host_headroom(root: str = "/") -> HostMemory:
    """What the host can give a benchmark now (see the module's docstring)."""
    info = meminfo(root)
    available, total = info.get("MemAvailable"), info.get("MemTotal")
    room = HostMemory(available, "MemAvailable") if available is not None else HostMemory(None, "unknown")
    firmware = firmware_ram_bytes(root)
    if available is not None and total is not None and firmware and firmware > 1.02 * total:
        # Guest RAM given back to the host (a balloon) returns as the guest uses it.
        in_use = total - available
        room = HostMemory(firmware - in_use, f"{firmware} bytes of RAM by the firmware map less {in_use} in use "
                                              f"(MemTotal {total} now: memory that grows on demand)")
    limited = cgroup_headroom(root)
    if limited is not None and (room.available_bytes is None or limited[0] < room.available_bytes):
        room = HostMemory(limited[0], limited[1])
    return room


def growable_memory(root: str = "/") -> str | None:
    """Why this VM's memory can grow as it is used, in words (None: no sign of it): a virtio balloon
    or virtio-mem device bound to its driver, or memory blocks offline that hotplug can bring online."""
    signs = []
    for driver, what in (("virtio_balloon", "a virtio balloon"), ("virtio_mem", "a virtio-mem device")):
        folder = Path(root, "sys/bus/virtio/drivers", driver)
        if folder.is_dir() and any(p.name.startswith("virtio") for p in folder.iterdir()):
            signs.append(f"{what} is bound")
    memory = Path(root, "sys/devices/system/memory")
    offline = [b for b in (memory.glob("memory*") if memory.is_dir() else [])
               if (_read(b / "state") or "").strip() == "offline"]
    if offline:
        try:
            block = int((_read(memory / "block_size_bytes") or "0").strip(), 16)
        except ValueError:
            block = 0
        signs.append(f"{len(offline)} memory block(s)" + (f" ({len(offline) * block} bytes)" if block else "")
                     + " offline")
    return "; ".join(signs) or None


def growth_ceiling(root: str = "/") -> int | None:
    """The most RAM (bytes) this VM could reach by growing as it is used: the RAM the firmware handed
    the kernel (MemTotal where the firmware map is unreadable; a balloon gives back at most what it
    took) plus any offline memory blocks. None when a virtio-mem device is bound: it can plug more
    than either shows, so no ceiling is known."""
    folder = Path(root, "sys/bus/virtio/drivers/virtio_mem")
    if folder.is_dir() and any(p.name.startswith("virtio") for p in folder.iterdir()):
        return None
    ram = firmware_ram_bytes(root) or meminfo(root).get("MemTotal")
    if ram is None:
        return None
    memory = Path(root, "sys/devices/system/memory")
    offline = sum(1 for b in (memory.glob("memory*") if memory.is_dir() else [])
                  if (_read(b / "state") or "").strip() == "offline")
    try:
        block = int((_read(memory / "block_size_bytes") or "0").strip(), 16)
    except ValueError:
        block = 0
    return ram + offline * block
