"""A baseline made of its `--repeat` runs (issue 37): one run's luck no longer decides a verdict.

The CI recipe makes its baseline with `kvbench run --suite acceptance --repeat 3 --tag baseline=1`
(docs/github-actions.md), yet `compare baseline latest` compared each job with one of the three runs,
the last. That run's own level moves by the case's between-run noise: beside a CPU hog a planted 40 %
drop was caught in 4 of 10 jobs in one trial and 10 of 10 in another, the difference being the one
baseline run (docs/contention.md). So the base of a comparison is, case by case, the median over its
*batch* of each rate (median, p10 and p90 GB/s): the runs of the same `--repeat` (tags `repeat=i/N`)
carrying the base run's `baseline` tag, of its host, context and suite, whole, the new run excluded.
The change from the median of k runs to one new run varies by s·√(1 + v(k)) rather than s·√2 (s the
between-run noise, v(k) the variance of the median of k normal values in units of one's: 0.449 for
3: `noise.median_variance`), so the allowance narrows by that factor (`noise.allowance`'s `base_runs`).

A baseline export carries its batch's rates (`baseline_pool`), so a job in a fresh database pools as
one whose database holds the batch does. A base run tagged by hand (`kvbench tag 12 baseline`) has no
batch and is compared as itself.
"""

from __future__ import annotations

import statistics
from typing import Any

from kvbench.analyze.regress.compare import same_run
from kvbench.analyze.runs import RunDocument, run_document
from kvbench.errors import BadInput
from kvbench.metadata import CONTENTION
from kvbench.store.records import RATES, RunRecord
from kvbench.store.tags import BASELINE, WHOLE

POOL = "baseline_pool"  # in a run document: case id → [{"run", "started_at", "gbps", "contention"}], one per batch run
REPEAT = "repeat"  # the tag `kvbench run --repeat N` gives its i-th run: "i/N"


def _stored_run(store: Any, run: dict[str, Any]) -> dict[str, Any] | None:
    """`store`'s row of the document's run, None where the run is not one of `store`'s (an export of another database)."""
    if store is None or not isinstance(run.get("id"), int):
        return None
    try:
        row = store.run(store.resolve_run(run["id"]))
    except BadInput:
        return None
    return row if same_run(RunRecord.from_row(row).to_json(), run) else None


def _repeat(tags: dict[str, Any] | None) -> tuple[int, int] | None:
    """(i, N) of a run's `repeat=i/N` tag, None where it has none or it does not parse."""
    try:
        i, n = (int(x) for x in str((tags or {}).get(REPEAT)).split("/"))
    except ValueError:
        return None
    return (i, n) if 1 <= i <= n else None


def batch_run_ids(store: Any, run: dict[str, Any]) -> list[int]:
    """The ids, oldest first, of the `--repeat` batch of `run` (a run document's `run`) in `store`: the whole
    runs tagged `repeat=j/N` of its N with its `baseline` tag's value, host, context and suite, the nearest
    before it for each j < i and after it for each j > i. [its id] where it has no batch; [] where the run
    is not `store`'s."""
    row = _stored_run(store, run)
    if row is None:
        return []
    tags, place = row.get("tags") or {}, _repeat(row.get("tags"))
    if tags.get(BASELINE) is None or place is None:
        return [row["id"]]
    i, n = place
    chosen = {i: row["id"]}
    for other in store.runs(host_ids=[row["host_id"]]):
        there = _repeat(other.get("tags"))
        if (there is None or there[1] != n or there[0] == i or (other.get("tags") or {}).get(BASELINE) != tags[BASELINE]
                or (other["context_id"], other["suite_hash"]) != (row["context_id"], row["suite_hash"])
                or other["status"] not in WHOLE or (there[0] < i) != (other["id"] < row["id"])):
            continue
        j = there[0]
        if j not in chosen or abs(other["id"] - row["id"]) < abs(chosen[j] - row["id"]):
            if store.partial(other["id"]) is None:
                chosen[j] = other["id"]
    return sorted(chosen.values())


def batch_rates(store: Any, doc: RunDocument) -> dict[str, list[dict[str, Any]]]:
    """Each case's rates in every run of `doc`'s batch where it was ok (`POOL`'s shape); {} where the batch
    is the run alone. What a baseline export carries and `pooled_base` pools."""
    ids = batch_run_ids(store, doc["run"])
    if len(ids) < 2:
        return {}
    pool: dict[str, list[dict[str, Any]]] = {}
    for run_id in ids:
        other = doc if run_id == doc["run"]["id"] else run_document(store, run_id)
        for r in other["results"]:
            if r["status"] == "ok" and r.get("gbps") and all(r["gbps"].get(k) for k in RATES):
                pool.setdefault(r["case"], []).append({
                    "run": run_id, "started_at": other["run"].get("started_at"),
                    "gbps": {k: float(r["gbps"][k]) for k in RATES},
                    "contention": (r.get("metadata") or {}).get(CONTENTION)})
    return pool


def _pooled_result(result: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """`result` with its rates the median over `entries` of each, and the contention of the entry whose
    median rate is the middle one (the run whose level the pool's median is)."""
    middle = sorted(entries, key=lambda e: e["gbps"]["median"])[(len(entries) - 1) // 2]
    metadata = {**(result.get("metadata") or {}), CONTENTION: middle.get("contention")}
    if middle.get("contention") is None:
        metadata.pop(CONTENTION)
    return {**result, "gbps": {k: float(statistics.median(e["gbps"][k] for e in entries)) for k in RATES},
            "metadata": metadata, "pooled_runs": [e["run"] for e in entries]}


def pooled_base(store: Any, base: RunDocument, new: RunDocument) -> RunDocument:
    """`base` as a comparison with `new` weighs it: each case ok in it whose batch (`batch_rates`, or the
    `baseline_pool` an export carries) holds it ok in 2 runs or more, `new` left out, with the median of
    each rate over them and `pooled_runs` naming them; `base` itself where there is no batch."""
    pool = base.get(POOL) or batch_rates(store, base)
    if not pool:
        return base
    n = new["run"]
    is_new = lambda e: e["run"] == n.get("id") and e.get("started_at") == n.get("started_at")  # noqa: E731
    results = []
    for r in base["results"]:
        entries = [e for e in pool.get(r.get("case"), []) if not is_new(e)]
        results.append(_pooled_result(r, entries) if r["status"] == "ok" and len(entries) >= 2 else r)
    return {**base, "results": results}
