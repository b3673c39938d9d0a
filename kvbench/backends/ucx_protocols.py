"""Which UCX transports and devices a transfer really used, from UCX's own protocol table.

UCX prints its protocol selection (`UCX_PROTO_INFO=y`) to its log the first time an
operation runs; kvbench turns it on for its own agents, reads the log (UCX_LOG_FILE) after
the first transfer, and keeps the rows for remote writes (ucp_put) and reads (ucp_get):
e.g. `0..inf zero-copy cma/memory` on one host, `rc_mlx5/mlx5_0:1` across an InfiniBand port.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator

_TITLE = re.compile(r"\|\s*remote memory (write|read) by ucp_(put|get)")
_ROW = re.compile(r"\|\s*(\S+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$")


@contextlib.contextmanager
def proto_info_enabled() -> Iterator[None]:
    """UCX_PROTO_INFO=y while agents are created (UCX reads its config then)."""
    saved = os.environ.get("UCX_PROTO_INFO")
    os.environ["UCX_PROTO_INFO"] = "y"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("UCX_PROTO_INFO", None)
        else:
            os.environ["UCX_PROTO_INFO"] = saved


_held: str | None = None  # /proc/self/fd/N of this process's UCX log once its name is unlinked (hold_log)


def log_path() -> str | None:
    """This process's UCX log file (kvbench points UCX_LOG_FILE at one; see backends/nixl.py)."""
    if _held is not None:
        return _held
    template = os.environ.get("UCX_LOG_FILE")
    return template.replace("%p", str(os.getpid())) if template else None


def hold_log() -> None:
    """Unlink this process's UCX log while UCX writes to the open file, and read it from then on
    through its descriptor: a rank of a cluster killed even with SIGKILL leaves no log behind.
    Call it once UCX has opened the log (after the first agent); without the file, nothing changes."""
    global _held
    path = log_path()
    if _held is not None or not path or not os.path.basename(path).startswith("kvbench-ucx-"):
        return
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == path:
                _held = f"/proc/self/fd/{fd}"
                os.unlink(path)
                return
        except OSError:
            continue


def log_size() -> int:
    path = log_path()
    return os.path.getsize(path) if path and os.path.exists(path) else 0


def log_since(offset: int, settle_s: float = 0.3, limit_s: float = 2.0) -> list[str]:
    """Lines UCX logged after byte `offset`, once its progress thread has been quiet for `settle_s`."""
    path = log_path()
    if not path:
        return []
    deadline, size, quiet_since = time.monotonic() + limit_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        now = os.path.getsize(path) if os.path.exists(path) else 0
        if now != size:
            size, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= settle_s:
            break
        time.sleep(0.02)
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").splitlines()


def parse(lines: list[str]) -> dict[str, list[str]]:
    """{"write": ["0..inf zero-copy cma/memory"], "read": [...]} from UCX's protocol tables."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines:
        title = _TITLE.search(line)
        if title:
            current = title.group(1)
            out.setdefault(current, [])
            continue
        if " cfg#" in line or " by ucp_" in line:  # the next table, for another operation
            current = None
            continue
        if current is None:
            continue
        row = _ROW.search(line)
        if row and row.group(1) not in ("Range",) and not set(row.group(1)) <= set("-+"):
            entry = f"{row.group(1)} {row.group(2)} {row.group(3)}"
            if entry not in out[current]:
                out[current].append(entry)
    return out


def devices(protocols: dict[str, list[str]]) -> list[str]:
    """The transport/device pairs named in the table, e.g. ["cma/memory", "rc_mlx5/mlx5_0:1"]."""
    found = []
    for rows in protocols.values():
        for row in rows:
            for token in row.split()[2:]:
                for part in token.split(","):
                    if "/" in part and part not in found:
                        found.append(part)
    return found


_SHARE = re.compile(r"(\d+)% on (\S+/\S+)")


def lane_shares(protocols: dict[str, list[str]]) -> dict[str, float]:
    """UCX's planned split of one operation over its lanes (a fraction per transport/device), from a
    multi-lane row of its protocol table (`50% on rc_mlx5/mlx5_0:1 and 50% on rc_mlx5/mlx5_1:1`): the
    weights UCX chose from each lane's bandwidth, not bytes it counted. The largest range's row wins."""
    shares: dict[str, float] = {}
    for rows in protocols.values():
        for row in rows:
            found = _SHARE.findall(row)
            if found:
                shares = {lane: int(pct) / 100 for pct, lane in found}
    return shares
