"""Byte counters of a network device, as the kernel keeps them (sysfs): what each rail of a
multi-NIC transfer really carried, where UCX itself does not say.

UCX names devices `mlx5_0:1` (an RDMA port: `port_xmit_data` / `port_rcv_data`, counted in 4-byte
words) or by interface (`eth0`, `lo`, a veth: `statistics/tx_bytes` / `rx_bytes`). A counter counts
everything the device carried — protocol headers, retransmissions, and any other traffic on it
(the loopback carries every local connection) — so a delta bounds a rail's share, never times it.
"""

from __future__ import annotations

from pathlib import Path

_RDMA_WORD = 4  # port_xmit_data / port_rcv_data count 32-bit words (IBTA PortCounters)


def _int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def read_counters(device: str, root: str = "/") -> tuple[dict[str, int] | None, str | None]:
    """({"tx_bytes", "rx_bytes"}, None) of a UCX device name now, or (None, why they cannot be read)."""
    name, _, port = device.partition(":")
    if not name or "/" in name or name in (".", ".."):
        return None, f"'{device}' is not a device name"
    rdma = Path(root, "sys/class/infiniband", name, "ports", port or "1", "counters")
    if rdma.is_dir():
        tx, rx = _int(rdma / "port_xmit_data"), _int(rdma / "port_rcv_data")
        if tx is not None and rx is not None:
            return {"tx_bytes": tx * _RDMA_WORD, "rx_bytes": rx * _RDMA_WORD}, None
    net = Path(root, "sys/class/net", name, "statistics")
    tx, rx = _int(net / "tx_bytes"), _int(net / "rx_bytes")
    if tx is not None and rx is not None:
        return {"tx_bytes": tx, "rx_bytes": rx}, None
    return None, f"no byte counters for {device} in sysfs (neither an RDMA port nor a network interface here)"


def counter_deltas(before: dict[str, tuple[dict[str, int] | None, str | None]],
                   after: dict[str, tuple[dict[str, int] | None, str | None]]) -> dict[str, dict]:
    """Per device: the bytes its counters grew by between two `read_counters` of every device, or
    `unknown` with the reason."""
    out: dict[str, dict] = {}
    for device, (first, why) in before.items():
        last, why_after = after.get(device, (None, "not read again"))
        if first is None or last is None:
            out[device] = {"unknown": why or why_after}
        else:
            out[device] = {k: last[k] - first[k] for k in ("tx_bytes", "rx_bytes")}
    return out
