"""Which box a result came from: an id that stays the same for as long as the box does.

Hashed (sha256 of canonical JSON) are only things that identify a machine and do not drift: the
system's own id (a hash of its DMI UUID or serial, else of systemd's machine-id), the CPU model and
socket count, the GPUs (UUIDs, or name + PCI address), and the physical NICs and NVMe drives
(model + PCI address). Never the hostname (a container's is its id), a memory size (VMs grow and
shrink), link state, an error text, the PCI device list (virtual functions, hot-plug) or cpu
lists: those are recorded as facts beside the id, not in it. Only where the system has no id at
all does the hostname stand in, and says so.

`KVBENCH_HOST_ID` names the host instead (containers, clusters that name their own machines).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from kvbench.errors import BadInput
from kvbench.hardware.facts import HostFacts

HOST_ID_ENV = "KVBENCH_HOST_ID"
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def identity(facts: HostFacts) -> dict[str, Any]:
    """What the host id is a hash of."""
    return {
        "system": facts.system_id or f"hostname:{facts.hostname}",
        "cpu": [facts.cpu_model, facts.sockets],
        "gpus": sorted(g.uuid or f"{g.name}@{g.bus_id}" for g in facts.gpus),
        "nics": sorted({f"{n.model or ''}@{n.bdf}" for n in facts.nics if n.bdf and not n.virtual}),
        "nvme": sorted(f"{d.model or ''}@{d.bdf}" for d in facts.nvme if d.bdf),
    }


def host_label() -> str | None:
    """`KVBENCH_HOST_ID` when set (checked: 1 to 64 letters, digits, '.', '_', ':', '-')."""
    label = os.environ.get(HOST_ID_ENV)
    if label is None:
        return None
    if not _LABEL.match(label):
        raise BadInput(f"bad {HOST_ID_ENV} '{label}': use 1 to 64 letters, digits, '.', '_', ':' or '-'")
    return label


def host_id(facts: HostFacts) -> str:
    label = host_label()
    if label:
        return label
    blob = json.dumps(identity(facts), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def same_box_by_older_facts(stored: dict[str, Any], facts: HostFacts) -> bool:
    """Whether facts an older kvbench stored under its own host id (which hashed drifting things)
    describe this box: the same hostname, CPU and sockets, GPUs and NVMe drives. Facts this kvbench
    stores carry a system id and are never matched this way."""
    if not stored or "system_id" in stored:
        return False
    gpus = sorted(g.get("uuid") or f"{g.get('name')}@{g.get('bus_id')}" for g in stored.get("gpus") or [])
    nvme = sorted(f"{d.get('model') or ''}@{d.get('bdf')}" for d in stored.get("nvme") or [] if d.get("bdf"))
    mine = identity(facts)
    return (stored.get("hostname") == facts.hostname and stored.get("cpu_model") == facts.cpu_model
            and stored.get("sockets") == facts.sockets and gpus == mine["gpus"] and nvme == mine["nvme"])
