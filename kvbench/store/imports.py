"""Runs brought in from export files (`kvbench import`): the ranks of a cluster run that each stored to a
database of their own become one cluster run again in one database.

Idempotent: a run is known by its host, its start (to the microsecond) and its kvbench version, so
importing the same export twice, or an export of a run this database already holds, stores nothing
again; the run id it already has is given back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import schema
from kvbench.store.records import RATES, STATS


def _moment(value: Any, what: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise BadInput(f"bad {what} '{value}': expected an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _row(result: dict[str, Any]) -> dict[str, Any]:
    """A run document's result as the `result` table's columns (without run and host)."""
    gbps, seconds = result.get("gbps") or {}, result.get("seconds") or {}
    return {"bench": result["bench"], "params": result["params"], "case_hash": result["case"],
            "bytes_per_op": result.get("bytes"), "loops": None, "timer": None,
            **{f"{k}_s": seconds.get(k) for k in STATS}, **{f"gbps_{k}": gbps.get(k) for k in RATES},
            "peak_gbps": result.get("peak_gbps"), "peak_source": result.get("peak_source"),
            "efficiency": result.get("efficiency"), "verified": bool(result.get("verified")),
            "status": result["status"], "reason": result.get("reason"), "warnings": list(result.get("warnings") or []),
            "extra": result.get("metadata") or {}}


def check_importable(doc: dict[str, Any], where: str) -> None:
    """What a database must not hold beyond what every reader of an export checks (analyze/runs.py
    `read_export`): a run without a start (it cannot be known again), a run still `running` (its owner
    would be looked for on this host), a `complete` run with no results, and one case twice in one run
    (two rounds of a cluster pattern are two cases). `BadInput` naming it; called before anything is
    stored, and before the duplicate check, so a tampered copy of a stored run is refused, not "already here"."""
    run = doc["run"]
    if _moment(run.get("started_at"), f"{where}: run.started_at") is None:
        raise BadInput(f"{where}: run {run['id']} has no start time: it cannot be imported")
    if run["status"] == "running":
        raise BadInput(f"{where}: run {run['id']} is still 'running': import its export once it has ended")
    if run["status"] == "complete" and not doc["results"]:
        raise BadInput(f"{where}: run {run['id']} is 'complete' with no results")
    seen: dict[tuple[str, Any], int] = {}
    for i, result in enumerate(doc["results"]):
        key = (result["case"], ((result.get("metadata") or {}).get("cluster") or {}).get("round"))
        if key in seen:
            raise BadInput(f"{where}: results {seen[key]} and {i} are both case {result['case']} "
                           f"({result['bench']}): one run holds one result per case")
        seen[key] = i


def _facts(host: dict[str, Any]) -> dict[str, Any]:
    """The facts the export's run was measured on, kept with the imported run as `run_document` reads them
    (issue 57 item 2: an import stored none, so the run was judged on its host's first-seen facts): the
    export's `facts_source` where it names one, else the run's own, as the export itself is judged."""
    facts = host.get("facts")
    if not isinstance(facts, dict) or not facts:
        return {}
    source = host.get("facts_source")
    return {"facts": facts, "facts_source": source if source in (schema.FACTS_OF_RUN, schema.FACTS_FIRST_SEEN)
            else schema.FACTS_OF_RUN}


def import_run(store, doc: dict[str, Any]) -> tuple[int, bool]:
    """Store one run document (an export of one run that passed `read_export` and `check_importable`):
    (its run id here, True when it was new)."""
    run, host, context = doc["run"], doc.get("host") or {}, doc.get("context") or {}
    host_id = str(run["host_id"])
    started = _moment(run.get("started_at"), "started_at")
    with store.engine.connect() as conn:
        same = conn.execute(sa.select(schema.run.c.id).where(
            schema.run.c.host_id == host_id, schema.run.c.started_at == started,
            schema.run.c.kvbench_version == (run.get("kvbench_version") or "?"))).first()
    if same is not None:
        return int(same.id), False
    store.ensure_host(host_id, str(host.get("hostname") or host_id[:16]), host.get("facts") or {})
    store.ensure_context(str(run["context_id"]), context.get("facts") or {})
    tags = dict(run.get("tags") or {})
    values = {"host_id": host_id, "context_id": str(run["context_id"]), "started_at": started,
              "ended_at": _moment(run.get("ended_at"), "ended_at"), "status": run["status"],
              "suite": run.get("suite"), "suite_hash": run.get("suite_hash"),
              "kvbench_version": run.get("kvbench_version") or "?", "git_sha": run.get("git_sha"),
              "git_dirty": run.get("git_dirty"), "reason": run.get("reason"), "tags": tags,
              "tags_at": {k: started.isoformat() for k in tags}, "system_state": run.get("system_state") or {},
              "cases_planned": run.get("cases_planned"), "heartbeat_at": _moment(run.get("ended_at"), "ended_at")
              or started, **_facts(host)}
    with store.engine.begin() as conn:
        run_id = int(conn.execute(schema.run.insert().values(**values)).inserted_primary_key[0])
    items = [(_row(r), list(r.get("samples_s") or [])) for r in doc["results"]]
    if items:
        store.add_results(run_id, items)
    return run_id, True
