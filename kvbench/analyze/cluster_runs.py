"""A cluster run: the N runs of one `python -m kvbench.cluster.launch`, read as one run document.

Each rank stores its share of the pattern as a run of its own, tagged `cluster=<id>` (the id rank 0
minted at the rendezvous), `cluster_rank` and `cluster_world`. `cluster:<id>` names them together;
every reader (report, compare, export, results, fleet --pairs) then sees the whole N × N matrix of
the launch. The document is rank 0's run record under the id `cluster:<id>`, every rank's results,
and `ranks`: each rank's own run document (so an export of a cluster run imports as its N runs).

A cluster run is whole when every rank's run is whole and every rank of the world has a run in this
database; otherwise `partial` says which rank is short and why (a rank whose database was not
imported yet, a rank killed before it stored anything).
"""

from __future__ import annotations

from typing import Any

from kvbench.errors import BadInput
from kvbench.store.database import Store

PREFIX = "cluster:"
# run statuses from the most to the least telling: a cluster run's status is the first any rank has
_STATUS_ORDER = ("crashed", "aborted", "running", "failed", "complete")


def cluster_id_of(ref: str) -> str | None:
    """The id in `cluster:<id>`, None for any other reference; `cluster:` alone is refused."""
    if not ref.startswith(PREFIX):
        return None
    cluster = ref[len(PREFIX):].strip()
    if not cluster:
        raise BadInput(f"bad run '{ref}': give the cluster id after 'cluster:' (python -m kvbench.cluster.launch prints it; "
                       "'kvbench fleet --pairs --run latest' reads the newest)")
    return cluster


def newest_cluster(store: Store) -> str:
    """The id of the newest cluster run in `store`; `BadInput` when none is stored."""
    found = store.newest_cluster()
    if found is None:
        raise BadInput(f"database {store.url} holds no cluster run (one launch of python -m kvbench.cluster.launch; "
                       "docs/cluster.md)")
    return found


def cluster_run_ids(store: Store, cluster: str) -> list[int]:
    """The run ids of cluster run `cluster`; `BadInput` when it has none in `store`."""
    runs = store.cluster_runs(cluster)
    if not runs:
        raise BadInput(f"no cluster run '{cluster}' in {store.url}: 'kvbench fleet --pairs --run latest' reads "
                       "the newest; 'kvbench import' brings in each rank's export")
    return [int(r["id"]) for r in runs]


def _rank(doc: dict[str, Any]) -> int | None:
    try:
        return int((doc["run"].get("tags") or {}).get("cluster_rank"))
    except (TypeError, ValueError):
        return None


def _world(docs: list[dict[str, Any]]) -> int | None:
    worlds = []
    for doc in docs:
        try:
            worlds.append(int((doc["run"].get("tags") or {}).get("cluster_world")))
        except (TypeError, ValueError):
            continue
    return max(worlds) if worlds else None


def merge_ranks(cluster: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One run document of cluster run `cluster` from its ranks' run documents (see the module's text).
    A pair two ranks both recorded (ranks storing apart cannot see that the other stored it: an `ok`
    result by its initiator beside a `failed` stand-in by its target) is kept once, `ok` first."""
    by_rank = sorted(docs, key=lambda d: (_rank(d) is None, _rank(d) or 0, str(d["run"]["id"])))
    first = by_rank[0]
    world = _world(docs)
    why = []
    for doc in by_rank:
        if doc["run"].get("partial"):
            why.append(f"rank {_rank(doc)} (run {doc['run']['id']}) is {doc['run']['partial']}")
    ranks = {_rank(d) for d in docs}
    if world is not None:
        absent = [r for r in range(world) if r not in ranks]
        if absent:
            why.append(f"rank(s) {', '.join(map(str, absent))} of {world} stored no run here (a rank storing to "
                       "its own database: 'kvbench import' its export)")
    statuses = [d["run"]["status"] for d in docs]
    status = next((s for s in _STATUS_ORDER if s in statuses), statuses[0])
    ended = [d["run"].get("ended_at") for d in docs]
    results: list[dict[str, Any]] = []
    seen: dict[tuple[str, Any], int] = {}
    for doc in by_rank:
        for result in doc["results"]:
            record = (result.get("metadata") or {}).get("cluster") or {}
            key = (result["case"], record.get("round"))
            if key in seen:
                if results[seen[key]]["status"] != "ok" and result["status"] == "ok":
                    results[seen[key]] = result
                continue
            seen[key] = len(results)
            results.append(result)
    run = {**first["run"], "id": f"{PREFIX}{cluster}", "status": status, "partial": "; ".join(why) or None,
           "started_at": min(str(d["run"].get("started_at") or "") for d in docs) or None,
           "ended_at": None if None in ended else max(str(e) for e in ended),
           "cases_planned": None,
           "system_state": {**(first["run"].get("system_state") or {}), "cluster": {
               "id": cluster, "world": world,
               "runs": {str(_rank(d)): d["run"]["id"] for d in by_rank},
               "hosts": {str(_rank(d)): (d.get("host") or {}).get("hostname") for d in by_rank}}}}
    return {**{k: v for k, v in first.items() if k not in ("run", "results")}, "run": run, "results": results,
            "ranks": docs}


def is_cluster_document(doc: dict[str, Any]) -> bool:
    return str(doc["run"]["id"]).startswith(PREFIX)
