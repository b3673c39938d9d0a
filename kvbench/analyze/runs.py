"""Run documents: a run and its results in the JSON contract, from the store or an export file.

Every analysis reads this one shape, so a stored run and a `--json` export compare alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from kvbench.analyze.cluster_runs import cluster_id_of, cluster_run_ids, merge_ranks
from kvbench.benches.describe import canonical_subset, older_results_filled
from kvbench.errors import BadInput
from kvbench.input_files import EXPORT_MAX_BYTES, read_json_file
from kvbench.store.database import Store
from kvbench.store.records import ResultRecord, RunRecord, validate_document
from kvbench.store.records import run_document as document
from kvbench.store.schema import FACTS_FIRST_SEEN, FACTS_OF_RUN

RunDocument = dict[str, Any]  # {"run": {...}, "results": [...]} as `kvbench run --json` writes it


def run_document(store: Store, run_id: int) -> RunDocument:
    """The run, the host facts it was measured on, its context's and every result with its raw samples.

    `host.facts` are the run's own (read when it began); for a run stored before runs kept them, its
    host's first-seen facts, and `host.facts_source` says which (`run` or `first-seen`)."""
    run = store.run(run_id)
    host = store.host(run["host_id"]) or {}
    samples = store.run_samples(run_id)
    own = run.get("facts") is not None and run.get("facts_source") == FACTS_OF_RUN
    facts = run["facts"] if run.get("facts") is not None else host.get("facts")
    return older_results_filled(document(
        dataclasses.replace(RunRecord.from_row(run), partial=store.partial(run_id)),
        {"id": run["host_id"], "hostname": host.get("hostname"), "facts": facts,
         "facts_source": FACTS_OF_RUN if own else FACTS_FIRST_SEEN},
        [ResultRecord.from_row(r, samples.get(r["id"], [])) for r in store.results(run_id)],
        {"id": run["context_id"], "facts": store.context(run["context_id"])}))


def read_export(raw: Any, where: str) -> RunDocument:
    """An export's document checked as every reader needs it (`compare`, `report`, `import`): its fields
    and their types (store/records.py), each result's parameters parsed as kvbench stores them ("8MiB"
    is a size; a parameter of the wrong shape is refused, not stored to crash a reader later)."""
    try:
        doc = validate_document(raw, where)
    except RecursionError:  # a document deep enough to parse but not to walk
        raise BadInput(f"{where} is nested too deeply to be a run export") from None
    for i, result in enumerate(doc["results"]):
        odd = [k for k, v in result["params"].items() if not isinstance(v, str | int | float | bool | type(None))]
        if odd:  # a parameter is one value: an object or a list (hand-edited) would break every reader's describer
            raise BadInput(f"{where}: result {i}: params.{odd[0]} is {type(result['params'][odd[0]]).__name__}, "
                           "not one value")
        try:
            result["params"] = canonical_subset(result["bench"], result["params"])
        except BadInput as exc:
            raise BadInput(f"{where}: result {i}: {exc}") from None
    return doc


def load_document(ref: str, store_factory, prefer_hosts=None) -> RunDocument:
    """A run by id, `latest`, `baseline` (the run tagged `baseline` last), `cluster:<id>` (every rank's run
    of one launch), or a JSON export path. `latest` and `baseline` that pick a rank's run of a launch
    give its whole cluster run.

    `latest` and `baseline` are this host's where it has one (`prefer_hosts(store)` gives its ids),
    else any host's. `store_factory` is called only when the store is needed, so comparing two files
    needs no database.
    """
    path = Path(ref)
    # a path that exists and is no run id is a file, even a fifo or a folder: refused as one, by its type
    if path.suffix == ".json" or path.is_file() or (path.exists() and not str(ref).isdigit()):
        where = f"export file '{ref}'"
        return older_results_filled(read_export(read_json_file(path, where, EXPORT_MAX_BYTES), where))
    store = store_factory()
    cluster = cluster_id_of(ref)
    if cluster is not None:
        return cluster_document(store, cluster)
    mine = prefer_hosts(store) if prefer_hosts and ref in ("latest", "baseline") else None
    run_id = baseline_run(store, mine) if ref == "baseline" else store.resolve_run(ref, mine)
    if ref in ("latest", "baseline"):  # a rank of a launch stands for its whole cluster run
        cluster = store.cluster_of(run_id)
        if cluster:
            return cluster_document(store, cluster)
    return run_document(store, run_id)


def cluster_document(store: Store, cluster: str) -> RunDocument:
    """Cluster run `cluster` (kvbench/analyze/cluster_runs.py) as one run document."""
    return merge_ranks(cluster, [run_document(store, run_id) for run_id in cluster_run_ids(store, cluster)])


def baseline_run(store: Store, prefer_hosts: list[str] | None = None) -> int:
    """The whole run tagged `baseline` last: of `prefer_hosts` where they have one, else of any host."""
    found = (prefer_hosts and store.tagged_run("baseline", prefer_hosts)) or store.tagged_run("baseline")
    if found is None:
        raise BadInput("no run is tagged as baseline; tag one with 'kvbench run --tag baseline=1' or 'kvbench tag RUN baseline'")
    return found


def ok_results(doc: RunDocument) -> list[dict[str, Any]]:
    return [r for r in doc["results"] if r["status"] == "ok"]
