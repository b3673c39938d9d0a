"""What changed in a box's inventory between its runs: GPUs (present, model, UUID, serial, PCIe link at
max), NICs (link state and speed), NVMe drives, NUMA nodes and installed DRAM, each run judged against
the facts it recorded when it began (store schema version 4: `run.facts`).

A change is named with the run it has held since ("NIC eth2 down since run 41", "GPU 3 (0000:1A:00.0)
serial A → B since run 7", "DRAM 25 → 11 GB since run 12"), against the box's first run and against
the run before. The box is its host id, with the ids merged into it and the ids of the same chassis
(the same system id and CPU): a GPU taken out or swapped gives the box another host id (its identity
hashes the GPUs' UUIDs), but its earlier runs are still its history here.

DRAM is compared within the profile's tolerance (DRAM_TOLERANCE): a VM's NUMA MemTotal moves by a
few hundred MB over minutes, which is no change of the box.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kvbench.analyze.accept.profile import DRAM_TOLERANCE, dram_bytes

FactValue = tuple[str, Any]  # (as shown, as compared)


@dataclass(frozen=True)
class Change:
    """One fact that differs from an earlier run's: what it was, what it is, and since which run."""

    fact: str  # a stable key: "gpu 0000:1A:00.0 serial", "nic eth2", "dram"
    key: str  # the host-profile key it bears on (gpus, gpu_model, pcie_gen, nics, nvme, numa_nodes, dram_gb)
    before: str | None  # None: the fact did not exist (a GPU added)
    after: str | None  # None: it is gone (a GPU removed)
    since_run: int  # the first run of the unbroken stretch that ends at the judged run with the new value
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Drift:
    """A run's inventory against the box's first run and the run before it (None: no such run)."""

    run_id: int
    first_run: int | None
    previous_run: int | None
    since_first: tuple[Change, ...]
    since_previous: tuple[Change, ...]
    facts_source: str | None = None  # how the judged run's facts were recorded (schema FACTS_OF_RUN / FIRST_SEEN)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run_id, "first_run": self.first_run, "previous_run": self.previous_run,
                "facts_source": self.facts_source, "since_first": [c.to_dict() for c in self.since_first],
                "since_previous": [c.to_dict() for c in self.since_previous]}

    def changed(self, key: str) -> list[Change]:
        """The changes since the first run that bear on profile key `key`."""
        return [c for c in self.since_first if c.key == key]


def _gpu_label(gpu: dict[str, Any]) -> str:
    return f"GPU {gpu.get('index', '?')} ({gpu.get('bus_id') or '?'})"


def summary(facts: dict[str, Any] | None) -> dict[str, tuple[str, str, FactValue]]:
    """The facts drift compares, by key: (profile key, label, (shown, compared))."""
    out: dict[str, tuple[str, str, FactValue]] = {}
    if not facts:
        return out
    for gpu in facts.get("gpus") or []:
        bus = gpu.get("bus_id") or f"index {gpu.get('index')}"
        label = _gpu_label(gpu)
        name = gpu.get("name") or "?"
        out[f"gpu {bus}"] = ("gpus", label, (name, "present"))
        out[f"gpu {bus} model"] = ("gpu_model", f"{label} model", (name, name))
        for field in ("uuid", "serial"):
            if gpu.get(field):
                out[f"gpu {bus} {field}"] = ("gpu_serials", f"{label} {field}", (str(gpu[field]), str(gpu[field])))
        link = gpu.get("link") or {}
        if link.get("max_gen") and link.get("max_width"):
            shown = f"Gen{link['max_gen']} x{link['max_width']}"
            out[f"gpu {bus} link max"] = ("pcie_gen", f"{label} PCIe link at max", (shown, shown))
    for nic in facts.get("nics") or []:
        if nic.get("virtual"):
            continue  # SR-IOV functions come and go with the workload
        up = nic.get("state") != "down" and bool(nic.get("rate_gbit"))
        shown = f"up at {nic['rate_gbit']:g} Gb/s" if up else "down"
        out[f"nic {nic.get('name')}"] = ("nics", f"NIC {nic.get('name')}", (shown, shown))
    for drive in facts.get("nvme") or []:
        model = drive.get("model") or "?"
        out[f"nvme {drive.get('name')}"] = ("nvme", f"NVMe {drive.get('name')}", (model, model))
    if facts.get("numa"):
        count = len(facts["numa"])
        out["numa"] = ("numa_nodes", "NUMA nodes", (str(count), count))
    total = dram_bytes(facts)
    if total:
        out["dram"] = ("dram_gb", "DRAM", (f"{total / 1e9:.0f} GB", float(total)))
    return out


def _same(fact: str, a: FactValue | None, b: FactValue | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if fact == "dram":
        return abs(a[1] - b[1]) <= DRAM_TOLERANCE * max(a[1], b[1])
    return a[1] == b[1]


def _text(label: str, before: FactValue | None, after: FactValue | None, since: int) -> str:
    if after is None:
        what = f"{label} missing (was {before[0]})"
    elif before is None:
        what = f"{label} new ({after[0]})"
    elif after[0] == "down":
        what = f"{label} down (was {before[0]})"
    else:
        what = f"{label} {before[0]} → {after[0]}"
    return f"{what} since run {since}"


def _changes(history: list[tuple[int, dict[str, tuple[str, str, FactValue]]]], against: int) -> list[Change]:
    """The facts of the last run of `history` that differ from those of run `against` in it."""
    summaries = dict(history)
    now_id, now = history[-1]
    then = summaries[against]
    out = []
    for fact in sorted(set(now) | set(then)):
        before, after = then.get(fact), now.get(fact)
        if _same(fact, before and before[2], after and after[2]):
            continue
        since = now_id
        for run_id, facts in reversed(history[:-1]):  # back while the fact held its value of now
            if run_id <= against or not _same(fact, (facts.get(fact) or (0, 0, None))[2], after and after[2]):
                break
            since = run_id
        key, label = (after or before)[0], (after or before)[1]
        if fact.endswith((" uuid", " serial", " model", " link max")) and (before is None or after is None):
            if f"gpu {fact.split(' ')[1]}" in set(now) ^ set(then):
                continue  # the GPU itself came or went: said once, by its presence
        out.append(Change(fact, key, before and before[2][0], after and after[2][0], since,
                          _text(label, before and before[2], after and after[2], since)))
    return out


def drift_of(history: list[tuple[int, dict[str, Any] | None, str | None]], run_id: int) -> Drift:
    """Run `run_id`'s facts against the first and the previous run of `history` ((run id, facts, facts
    source), oldest first, the box's runs): runs without facts are left out."""
    source = next((s for rid, _f, s in history if rid == run_id), None)
    known = [(rid, summary(facts)) for rid, facts, _s in history if facts and rid <= run_id]
    if not known or known[-1][0] != run_id:
        return Drift(run_id, None, None, (), (), source)
    first = known[0][0] if len(known) > 1 else None
    previous = known[-2][0] if len(known) > 1 else None
    return Drift(run_id, first, previous,
                 tuple(_changes(known, first)) if first is not None else (),
                 tuple(_changes(known, previous)) if previous is not None else (), source)


def box_host_ids(hosts: dict[str, dict], aliases: dict[str, str], host_id: str) -> list[str]:
    """The ids a box's runs are stored under: `host_id`, the ids merged into it, and the hosts of the
    same chassis (the same system id, from DMI or machine-id, and the same CPU model and sockets)."""
    ids = {host_id} | {old for old, into in aliases.items() if into == host_id}
    facts = (hosts.get(host_id) or {}).get("facts") or {}
    system = facts.get("system_id")
    if system:
        chassis = (system, facts.get("cpu_model"), facts.get("sockets"))
        ids |= {hid for hid, row in hosts.items()
                if ((f := row.get("facts") or {}).get("system_id"), f.get("cpu_model"), f.get("sockets")) == chassis}
    return sorted(ids)


def run_drift(store, run_id: int) -> Drift:
    """Run `run_id`'s drift, read from `store`."""
    run = store.run(run_id)
    ids = box_host_ids(store.hosts(), store.aliases(), run["host_id"])
    return drift_of(store.runs_facts(ids, up_to=run_id), run_id)
