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
    mine = stored_id(store, facts)
    return {old: store.merge_host(old, mine) for old in older_ids(store, facts) if old != mine}


def _merged_into(host: str, aliases: dict[str, str]) -> str:
    seen = set()
    while host in aliases and host not in seen:
        seen.add(host)
        host = aliases[host]
    return host


def stored_id(store, facts: HostFacts) -> str:
    """The id this box's runs go under: its own, or the one it was merged into (`kvbench host merge`
    keeps a merged id as an alias; a box that still reports it, e.g. by KVBENCH_HOST_ID, must not
    appear as a host again)."""
    return _merged_into(host_id(facts), store.aliases())


def this_host_ids(store, facts: HostFacts) -> list[str]:
    """Every id this box's runs are stored under (the one it writes to, older ones not merged yet), and
    the ids merged into it, which an exported run may still carry."""
    aliases = store.aliases()
    ids = [_merged_into(host_id(facts), aliases), *older_ids(store, facts)]
    ids += [old for old, into in aliases.items() if into in ids]
    return list(dict.fromkeys(ids))
