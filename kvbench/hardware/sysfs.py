"""Host facts read from /proc and /sys. Every reader takes a root so tests use recorded trees."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
from pathlib import Path

from kvbench.hardware.facts import Link, Nic, NumaNode, Nvme, PciDevice

_GTS_TO_GEN = {"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6, "128.0": 7}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def link_gen(speed: str | None) -> int | None:
    """`"32.0 GT/s PCIe"` → 5; None for unknown or absent speeds."""
    if not speed:
        return None
    return _GTS_TO_GEN.get(speed.split()[0].rstrip("GT/s"))


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _numa(text: str | None) -> int | None:
    value = _int(text)
    return None if value is None or value < 0 else value


def pci_link(dev: Path) -> Link:
    return Link(
        gen=link_gen(_read(dev / "current_link_speed")),
        width=_int(_read(dev / "current_link_width")),
        max_gen=link_gen(_read(dev / "max_link_speed")),
        max_width=_int(_read(dev / "max_link_width")),
    )


def pci_devices(root: str = "/") -> tuple[PciDevice, ...]:
    """Every PCI function that reports a link, with its NUMA node."""
    base = Path(root, "sys/bus/pci/devices")
    out = []
    for dev in sorted(base.iterdir()) if base.is_dir() else []:
        link = pci_link(dev)
        if link.max_gen is None and link.gen is None:
            continue
        out.append(PciDevice(
            bdf=dev.name, vendor=_read(dev / "vendor") or "", device=_read(dev / "device") or "",
            pci_class=_read(dev / "class") or "", numa_node=_numa(_read(dev / "numa_node")), link=link,
        ))
    return tuple(out)


def normalize_bdf(bdf: str) -> str:
    """`"00000000:1B:00.0"` (NVML) or `"1b:00.0"` → `"0000:1b:00.0"` (sysfs)."""
    parts = bdf.strip().lower().split(":")
    domain = parts[0][-4:] if len(parts) == 3 else "0000"
    return f"{domain}:{parts[-2]}:{parts[-1]}"


def pci_device(bdf: str, root: str = "/") -> PciDevice | None:
    """The PCI function at `bdf`, in any of the usual spellings."""
    wanted = normalize_bdf(bdf)
    return next((d for d in pci_devices(root) if normalize_bdf(d.bdf) == wanted), None)


def _bdf_of(dev_link: Path) -> str | None:
    try:
        return Path(os.readlink(dev_link)).name
    except OSError:
        return None


def nics(root: str = "/") -> tuple[Nic, ...]:
    """RDMA devices from /sys/class/infiniband (per-port rate) and physical NICs from /sys/class/net."""
    out: list[Nic] = []
    ib = Path(root, "sys/class/infiniband")
    for dev in sorted(ib.iterdir()) if ib.is_dir() else []:
        for port in sorted((dev / "ports").iterdir()) if (dev / "ports").is_dir() else []:
            rate = _read(port / "rate")  # "400 Gb/sec (4X NDR)"
            layer = (_read(port / "link_layer") or "InfiniBand").lower()
            out.append(Nic(
                name=f"{dev.name}/{port.name}", kind="infiniband" if layer == "infiniband" else "ethernet",
                bdf=_bdf_of(dev / "device"), numa_node=_numa(_read(dev / "device/numa_node")),
                rate_gbit=float(rate.split()[0]) if rate else None, model=_read(dev / "hca_type"),
                state=_port_state(_read(port / "state")),
            ))
    net = Path(root, "sys/class/net")
    for dev in sorted(net.iterdir()) if net.is_dir() else []:
        if not (dev / "device").exists():
            continue  # virtual interfaces (lo, bridges, veth) have no device
        speed = _int(_read(dev / "speed"))
        out.append(Nic(
            name=dev.name, kind="ethernet", bdf=_bdf_of(dev / "device"),
            numa_node=_numa(_read(dev / "device/numa_node")),
            rate_gbit=speed / 1000 if speed and speed > 0 else None,
            model=_read(dev / "device/device"),
            virtual=(dev / "device/physfn").exists(),  # an SR-IOV virtual function comes and goes
            state=_oper_state(_read(dev / "operstate")),
        ))
    return tuple(out)


def _port_state(text: str | None) -> str | None:
    """An RDMA port's state ("4: ACTIVE") as up or down; None when unreadable."""
    if not text:
        return None
    return "up" if "ACTIVE" in text.upper() else "down"


def _oper_state(text: str | None) -> str | None:
    """A network interface's operstate as up or down; None when the driver says "unknown" or nothing."""
    value = (text or "").strip().lower()
    return value if value in ("up", "down") else "down" if value in ("lowerlayerdown", "notpresent") else None


def nvme_devices(root: str = "/") -> tuple[Nvme, ...]:
    base = Path(root, "sys/class/nvme")
    out = []
    for dev in sorted(base.iterdir()) if base.is_dir() else []:
        out.append(Nvme(
            name=dev.name, model=_read(dev / "model"), bdf=_bdf_of(dev / "device"),
            numa_node=_numa(_read(dev / "device/numa_node")),
        ))
    return tuple(out)


def parse_cpulist(text: str) -> set[int]:
    """CPU numbers of a sysfs cpulist such as "0-55,112-167"."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def numa_nodes(root: str = "/") -> tuple[NumaNode, ...]:
    base = Path(root, "sys/devices/system/node")
    out = []
    for dev in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])) if base.is_dir() else []:
        total = None
        for line in (_read(dev / "meminfo") or "").splitlines():
            if "MemTotal:" in line:
                total = int(line.split()[-2]) * 1024
        out.append(NumaNode(node=int(dev.name[4:]), memory_bytes=total, cpus=_read(dev / "cpulist") or ""))
    return tuple(out)


def cpu_info(root: str = "/") -> dict:
    """Model, sockets, cores and hardware threads from /proc/cpuinfo."""
    text = _read(Path(root, "proc/cpuinfo")) or ""
    model, sockets, cores, threads = "", set(), set(), 0
    physical = "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "processor":
            threads += 1
        elif key == "model name" and not model:
            model = value
        elif key == "physical id":
            physical = value
            sockets.add(value)
        elif key == "core id":
            cores.add((physical, value))
    return {
        "cpu_model": model or platform.processor() or platform.machine(),
        "sockets": max(1, len(sockets)),
        "cores": len(cores) or threads,
        "threads": threads,
    }


def kernel_release() -> str:
    return platform.release()


def hostname() -> str:
    return socket.gethostname()


# Values firmware writes when it has no real serial or UUID: never an identity.
_PLACEHOLDERS = {"", "0", "none", "not specified", "not settable", "not available", "default string",
                 "to be filled by o.e.m.", "system serial number", "0123456789", "03000200-0400-0500-0006-000700080009",
                 "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"}


def system_identity(root: str = "/") -> tuple[str | None, str | None]:
    """(an identifier of this machine, where it came from): the DMI system UUID, else its serial,
    else systemd's machine-id; None where none is readable (a container without them).

    Only a hash of it leaves this function (machine-id is to be kept confidential, serials are
    personal enough): the same box gives the same value, and the value says nothing else."""
    for source, rel in (("DMI system UUID", "sys/class/dmi/id/product_uuid"),
                        ("DMI system serial", "sys/class/dmi/id/product_serial"),
                        ("machine-id", "etc/machine-id"), ("machine-id", "var/lib/dbus/machine-id")):
        value = (_read(Path(root, rel)) or "").strip()
        if value.lower() not in _PLACEHOLDERS:
            return hashlib.sha256(f"kvbench:{value}".encode()).hexdigest()[:32], source
    return None, None