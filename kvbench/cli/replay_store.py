"""`kvbench replay`'s projection kept in the database (the `replay` table) and read back (`--show ID`)."""

from __future__ import annotations

from typing import Any

from kvbench.cli.common import err, out
from kvbench.errors import BadInput


def database_in_use(db: str | None) -> bool:
    """A database given (--db, KVBENCH_DB) or the default SQLite file there already: where the prices came from."""
    from kvbench.store.connect import default_url, sqlite_path

    path = sqlite_path(db or default_url())
    return path is None or path.exists()


def store_replay(doc: dict[str, Any], trace_name: str, policy: str, db: str | None, asked: bool | None) -> int | None:
    """Store the replay `doc` (asked: --store; None: whenever a database is in use); its id, or None when
    not stored. A database that cannot take it: one line and no record when the user did not ask, exit 2
    when they did."""
    from kvbench import __version__
    from kvbench.analyze.decide.replay.stored import replay_record
    from kvbench.run.hosts import adopt_older_ids, stored_id
    from kvbench.run.this_host import host_facts
    from kvbench.store import open_store

    if asked is False or (asked is None and not database_in_use(db)):
        return None
    try:
        store = open_store(db)
        facts = host_facts(dram=False)
        adopt_older_ids(store, facts)
        host = stored_id(store, facts)
        store.ensure_host(host, facts.hostname, facts.to_dict())
        replay_id = store.add_replay({"host_id": host, "kvbench_version": __version__,
                                      **replay_record(doc, trace_name, policy)})
    except BadInput as e:
        if asked:
            raise
        err.print(f"replay not stored: {e}", markup=False, highlight=False)
        return None
    store.dispose()
    err.print(f"stored as replay {replay_id} in {store.url} (kvbench replay --show {replay_id})",
              markup=False, highlight=False)
    return replay_id


def stored(replay_id: int, db: str | None) -> dict[str, Any]:
    """Stored replay `replay_id`, every column; `BadInput` when there is none."""
    from kvbench.store import open_store

    store = open_store(db, read_only=True)
    record = store.replay(replay_id)
    store.dispose()
    if record is None:
        raise BadInput(f"no replay {replay_id} in {store.url} (kvbench replay --list shows them)")
    return record


def header(record: dict[str, Any]) -> str:
    from kvbench.analyze.decide.replay.stored import price_result_ids

    ids = price_result_ids(record)
    return (f"replay {record['id']} stored {record['created_at']} by kvbench {record['kvbench_version']}: trace "
            f"{record['trace_name']} (sha256 {record['trace_sha256'][:16]}…, {record['trace_block_tokens']} tokens a "
            f"hash block), {record['model']} {record['dtype']} tp={record['tp']}, {record['engine_block_tokens']} "
            f"tokens an engine block, policy {record['policy']}, restores into {record['restore_into']}; prices from "
            f"results {', '.join(map(str, ids)) if ids else 'none (every price at spec)'}"
            + (f"; executed as run {record['executed_run_id']}" if record.get("executed_run_id") else ""))


def list_replays(db: str | None) -> None:
    from rich.table import Table

    from kvbench.store import open_store

    store = open_store(db, read_only=True)
    rows = store.replays()
    store.dispose()
    table = Table(title=f"stored replays in {store.url}")
    for name in ("id", "stored", "trace", "sha256", "model", "policy", "configurations"):
        table.add_column(name)
    for r in rows:
        table.add_row(str(r["id"]), r["created_at"][:19], r["trace_name"], r["trace_sha256"][:12],
                      f"{r['model']} {r['dtype']} tp={r['tp']}", r["policy"], "; ".join(c["label"] for c in r["configs"]))
    out.print(table)
