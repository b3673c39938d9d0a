"""This box in a database that may hold it under older ids: an older kvbench hashed things that
drift (hostname, memory sizes, link state), so one box could appear as several hosts. Writing
commands merge those into this box's id (their runs move, the old id stays as an alias); reading
commands count them as this box without writing."""

from __future__ import annotations

from kvbench.hardware.facts import HostFacts
from kvbench.hardware.identity import host_id, host_label, same_box_by_older_facts


def older_ids(store, facts: HostFacts) -> list[str]:
    """Host ids in `store` that an older kvbench gave this same box (none where KVBENCH_HOST_ID names it)."""
    if host_label():
        return []
    mine = host_id(facts)
    return [hid for hid, row in store.hosts(hostname=facts.hostname).items()
            if hid != mine and same_box_by_older_facts(row.get("facts") or {}, facts)]


def adopt_older_ids(store, facts: HostFacts) -> dict[str, int]:
    """Merge this box's older ids into its id (writing); {old id: runs moved}."""
    mine = host_id(facts)
    return {old: store.merge_host(old, mine) for old in older_ids(store, facts)}


def this_host_ids(store, facts: HostFacts) -> list[str]:
    """Every id this box's runs are stored under: its own, and older ones not merged yet."""
    return [host_id(facts), *older_ids(store, facts)]
