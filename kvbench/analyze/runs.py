"""Run documents: a run and its results in the JSON contract, from the store or an export file.

Every analysis reads this one shape, so a stored run and a `--json` export compare alike.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kvbench.errors import BadInput
from kvbench.records import ResultRecord, RunRecord, validate_document
from kvbench.records import run_document as document
from kvbench.store.database import Store

RunDocument = dict[str, Any]  # {"run": {...}, "results": [...]} as `kvbench run --json` writes it


def run_document(store: Store, run_id: int) -> RunDocument:
    """The run, its host's facts and every result with its raw samples."""
    run = store.run(run_id)
    host = store.host(run["host_id"]) or {}
    samples = store.run_samples(run_id)
    return document(dataclasses.replace(RunRecord.from_row(run), partial=store.partial(run_id)),
                    {"id": run["host_id"], "hostname": host.get("hostname"), "facts": host.get("facts")},
                    [ResultRecord.from_row(r, samples.get(r["id"], [])) for r in store.results(run_id)])


def load_document(ref: str, store_factory) -> RunDocument:
    """A run by id, `latest`, `baseline` (the newest run tagged `baseline` on its host), or a JSON export path.

    `store_factory` is called only when the store is needed, so comparing two files needs no database.
    """
    path = Path(ref)
    if path.suffix == ".json" or path.is_file():
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            raise BadInput(f"export file '{ref}' does not exist") from None
        except json.JSONDecodeError as exc:
            raise BadInput(f"export file '{ref}' is not JSON: {exc}") from None
        return validate_document(doc, f"export file '{ref}'")
    store = store_factory()
    if ref == "baseline":
        return run_document(store, baseline_run(store))
    return run_document(store, store.resolve_run(ref))


def baseline_run(store: Store, host_id: str | None = None) -> int:
    """The newest whole run tagged `baseline` (on `host_id` when given)."""
    found = store.tagged_run("baseline", None if host_id is None else [host_id])
    if found is None:
        raise BadInput("no run is tagged as baseline; tag one with 'kvbench run --tag baseline=1' or 'kvbench tag RUN baseline'")
    return found


def ok_results(doc: RunDocument) -> list[dict[str, Any]]:
    return [r for r in doc["results"] if r["status"] == "ok"]
