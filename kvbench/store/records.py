"""The records that travel: a run and its results, typed once, with a format version in every JSON
document (pyperf's way) and migrations from older versions.

A stored row (`from_row`) and an exported document (`from_json`) become the same frozen record;
`to_json` writes the contract of DESIGN.md (`kvbench run --json`, `results --format json`,
`export`), which every analysis reads. `from_json` checks what it is given, so a hand-edited or
foreign file is refused with one line naming what is wrong, never a KeyError later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from kvbench.errors import BadInput
from kvbench.units import MAX_GBPS

FORMAT_VERSION = 2  # 1: the version sat inside "run"; 2: at the top of the document
STATS = ("median", "p10", "p90", "mean", "stdev", "min", "max")  # seconds per operation
RATES = ("median", "p10", "p90")  # GB/s: p10 is the slow end
UNITS = "GB/s = 1e9 bytes per second; seconds per operation"
Status = Literal["ok", "skipped", "failed"]
RunStatus = Literal["running", "complete", "aborted", "failed", "crashed"]
STATUSES: tuple[str, ...] = get_args(Status)
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)


def _iso(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


@dataclass(frozen=True)
class RunRecord:
    id: int | str
    host_id: str
    context_id: str
    status: str
    started_at: str | None = None
    ended_at: str | None = None
    suite: str | None = None
    suite_hash: str | None = None
    kvbench_version: str | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None
    reason: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    system_state: dict[str, Any] = field(default_factory=dict)
    cases_planned: int | None = None
    partial: str | None = None  # why the run is not whole (interrupted, crashed, short of cases); None if it is

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> RunRecord:
        names = cls.__dataclass_fields__
        values = {k: row.get(k) for k in names if k in row}
        values["started_at"], values["ended_at"] = _iso(row.get("started_at")), _iso(row.get("ended_at"))
        values["tags"], values["system_state"] = row.get("tags") or {}, row.get("system_state") or {}
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["units"] = UNITS
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "run") -> RunRecord:
        _need(data, where, {"id": (int, str), "host_id": str, "context_id": str, "status": str})
        if data["status"] not in RUN_STATUSES:
            raise BadInput(f"{where}: status '{data['status']}' is none of {', '.join(RUN_STATUSES)}")
        times = {}
        for name in ("started_at", "ended_at"):  # ISO 8601 with its zone, as kvbench writes them
            if data.get(name) is not None:
                try:
                    times[name] = datetime.fromisoformat(str(data[name]))
                except ValueError:
                    raise BadInput(f"{where}: {name} '{data[name]}' is not an ISO 8601 time") from None
        if len(times) == 2:
            try:
                backwards = times["ended_at"] < times["started_at"]
            except TypeError:  # one with a zone, one without
                raise BadInput(f"{where}: started_at and ended_at must both carry a zone, or neither") from None
            if backwards:
                raise BadInput(f"{where}: ended_at {data['ended_at']} is before started_at {data['started_at']}")
        _check_run_fields(data, where)
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["tags"], values["system_state"] = values.get("tags") or {}, values.get("system_state") or {}
        return cls(**values)


_RUN_FIELD_TYPES = {"suite": str, "suite_hash": str, "kvbench_version": str, "git_sha": str, "reason": str,
                    "partial": str, "git_dirty": bool, "cases_planned": int, "tags": dict, "system_state": dict}


def _check_run_fields(data: dict[str, Any], where: str) -> None:
    """The run's optional fields of their types (null allowed): a tampered `tags: "x"` or `cases_planned: "9"`
    is refused here, not stored to break `report`, `accept` or `history` later (issue 57 item 7)."""
    for name, kind in _RUN_FIELD_TYPES.items():
        value = data.get(name)
        if value is not None and (not isinstance(value, kind) or kind is int and isinstance(value, bool)):
            raise BadInput(f"{where}: '{name}' has the wrong type ({type(value).__name__}): expected "
                           f"{ {str: 'text', bool: 'true or false', int: 'an integer', dict: 'an object'}[kind]} or null")
    tags = data.get("tags") or {}
    if not all(isinstance(v, str) for v in tags.values()):
        raise BadInput(f"{where}: 'tags' must map each tag to a text value")


@dataclass(frozen=True)
class ResultRecord:
    bench: str
    params: dict[str, Any]
    case: str
    status: str
    bytes: int | None = None
    samples_s: tuple[float, ...] | None = None
    gbps: dict[str, float] | None = None
    seconds: dict[str, float] | None = None
    peak_gbps: float | None = None
    peak_source: str | None = None
    efficiency: float | None = None
    verified: bool = False
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: dict[str, Any], samples_s: list[float] | None = None) -> ResultRecord:
        """A stored `result` row (and its samples) as a record."""
        has_rate = row.get("gbps_median") is not None
        return cls(
            bench=row["bench"], params=row["params"], case=row["case_hash"], status=row["status"],
            bytes=row.get("bytes_per_op"), samples_s=tuple(samples_s) if samples_s is not None else None,
            gbps={k: row[f"gbps_{k}"] for k in RATES} if has_rate else None,
            seconds={k: row[f"{k}_s"] for k in STATS} if has_rate else None,
            peak_gbps=row.get("peak_gbps"), peak_source=row.get("peak_source"), efficiency=row.get("efficiency"),
            verified=bool(row.get("verified")), reason=row.get("reason"), warnings=tuple(row.get("warnings") or ()),
            metadata=row.get("extra") or {},
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "bench": self.bench, "params": self.params, "case": self.case, "bytes": self.bytes,
            "samples": len(self.samples_s) if self.samples_s is not None else None,
            "gbps": self.gbps, "seconds": self.seconds, "peak_gbps": self.peak_gbps, "peak_source": self.peak_source,
            "efficiency": self.efficiency, "verified": self.verified, "status": self.status, "reason": self.reason,
            "warnings": list(self.warnings), "metadata": self.metadata,
        }
        if self.samples_s is not None:
            out["samples_s"] = list(self.samples_s)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "result") -> ResultRecord:
        _need(data, where, {"bench": str, "params": dict, "case": str, "status": str})
        if data["status"] not in STATUSES:
            raise BadInput(f"{where}: status '{data['status']}' is none of {', '.join(STATUSES)}")
        if data["status"] == "ok":
            _need(data, where, {"gbps": dict})
            _need(data["gbps"], f"{where}.gbps", dict.fromkeys(RATES, (int, float)))
        _check_numbers(data, where)
        for name, kind, words in (("metadata", dict, "an object"), ("warnings", list, "a list of texts"),
                                  ("reason", str, "text"), ("peak_source", str, "text")):
            if data.get(name) is not None and not isinstance(data[name], kind):
                raise BadInput(f"{where}: '{name}' has the wrong type ({type(data[name]).__name__}): expected {words}")
        if not all(isinstance(w, str) for w in data.get("warnings") or []):
            raise BadInput(f"{where}: 'warnings' must be a list of texts")
        samples = data.get("samples_s")
        if samples is not None and (not isinstance(samples, list) or
                                    not all(isinstance(s, int | float) and s > 0 for s in samples)):
            raise BadInput(f"{where}: samples_s must be a list of positive seconds")
        if data["status"] == "ok" and samples is not None and not samples:
            raise BadInput(f"{where}: an ok result with no samples (samples_s is empty)")
        size = data.get("bytes")
        if data["status"] == "ok" and size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
            raise BadInput(f"{where}: bytes must be a positive integer, not {size!r}")
        return cls(
            bench=data["bench"], params=data["params"], case=data["case"], status=data["status"],
            bytes=data.get("bytes"), samples_s=tuple(samples) if samples is not None else None,
            gbps=data.get("gbps"), seconds=data.get("seconds"), peak_gbps=data.get("peak_gbps"),
            peak_source=data.get("peak_source"), efficiency=data.get("efficiency"),
            verified=bool(data.get("verified")), reason=data.get("reason"),
            warnings=tuple(data.get("warnings") or ()), metadata=data.get("metadata") or {},
        )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_numbers(data: dict[str, Any], where: str) -> None:
    """Refuse what no measurement can be (hostile trial H8, H9): a rate or peak that is not in
    (0, MAX_GBPS] GB/s, negative or non-finite seconds, a negative efficiency, an ok result counting no
    samples, and `verified` that is not a boolean ("no" would read as true)."""
    ok = data["status"] == "ok"
    verified = data.get("verified")
    if verified is not None and not isinstance(verified, bool):
        raise BadInput(f"{where}: 'verified' has the wrong type ({type(verified).__name__}): true or false")
    for name, value in [(f"gbps.{k}", (data.get("gbps") or {}).get(k)) for k in RATES] + [("peak_gbps", data.get("peak_gbps"))]:
        if value is None and not (ok and name.startswith("gbps.")):
            continue
        if not _number(value) or not 0 < value <= MAX_GBPS:
            raise BadInput(f"{where}: {name} {value!r} is no rate (0 < GB/s <= {MAX_GBPS:g})")
    for name, value in (data.get("seconds") or {}).items():
        if value is not None and (not _number(value) or not 0 <= value < float("inf")):
            raise BadInput(f"{where}: seconds.{name} {value!r} is no duration (finite, >= 0 s)")
    efficiency = data.get("efficiency")
    if efficiency is not None and (not _number(efficiency) or not 0 <= efficiency < float("inf")):
        raise BadInput(f"{where}: efficiency {efficiency!r} is no fraction of a peak (finite, >= 0)")
    count = data.get("samples")
    if count is not None and (not _number(count) or count != int(count) or count < (1 if ok else 0)):
        raise BadInput(f"{where}: samples {count!r} is no count of samples" + (" (an ok result has at least 1)" if ok else ""))


def _need(data: Any, where: str, fields: dict[str, Any]) -> None:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected an object, found {type(data).__name__}")
    for name, kind in fields.items():
        if name not in data:
            raise BadInput(f"{where} lacks '{name}'")
        if not isinstance(data[name], kind):
            raise BadInput(f"{where}: '{name}' has the wrong type ({type(data[name]).__name__})")


def run_document(run: RunRecord, host: dict[str, Any] | None, results: list[ResultRecord],
                 context: dict[str, Any] | None = None, history: dict[str, list[float]] | None = None,
                 pool: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The JSON document of a run: format version, run, host, context (the software it ran under:
    driver, CUDA, library versions; absent from older exports), results, and in an export of a stored
    run `history`: each case's fast end (p90 GB/s) in its host's runs of that context up to and including
    this one (kvbench/analyze/regress/carried.py), so a job in a fresh database still has the case's noise; in
    an export of a `--repeat` baseline `baseline_pool`: each case's rates in every run of the batch
    (kvbench/analyze/regress/pooled.py)."""
    return {"format_version": FORMAT_VERSION, "run": run.to_json(), "host": host,
            **({"context": context} if context is not None else {}), "results": [r.to_json() for r in results],
            **({"history": history} if history is not None else {}),
            **({"baseline_pool": pool} if pool is not None else {})}


def migrate(doc: Any, where: str) -> dict[str, Any]:
    """An exported run document of any version this kvbench knows, as the current version."""
    if not isinstance(doc, dict) or "run" not in doc or "results" not in doc:
        raise BadInput(f"{where} is not a kvbench run export (no 'run' and 'results')")
    version = doc.get("format_version", (doc["run"] or {}).get("format_version") if isinstance(doc["run"], dict) else None)
    if version == 1:  # the version moved from "run" to the top of the document
        doc = {**doc, "format_version": 2, "run": {k: v for k, v in doc["run"].items() if k != "format_version"}}
        version = 2
    if version != FORMAT_VERSION:
        raise BadInput(f"{where} has format version {version!r}; this kvbench reads 1 and {FORMAT_VERSION}")
    return doc


def validate_document(doc: Any, where: str) -> dict[str, Any]:
    """`doc` migrated to the current version and checked field by field: the records' JSON again."""
    doc = migrate(doc, where)
    run = RunRecord.from_json(doc["run"], f"{where}: run")
    if not isinstance(doc["results"], list):
        raise BadInput(f"{where}: 'results' must be a list")
    results = [ResultRecord.from_json(r, f"{where}: result {i}") for i, r in enumerate(doc["results"])]
    host, context = doc.get("host"), doc.get("context")
    for name, value in (("host", host), ("context", context)):
        if value is not None and not isinstance(value, dict):
            raise BadInput(f"{where}: '{name}' must be an object")
        if value is not None and value.get("facts") is not None and not isinstance(value["facts"], dict):
            raise BadInput(f"{where}: '{name}.facts' must be an object, not {type(value['facts']).__name__}")
    if host is not None and host.get("hostname") is not None and not isinstance(host["hostname"], str):
        raise BadInput(f"{where}: 'host.hostname' must be text")
    pool = _pool(doc.get("baseline_pool"), where)
    _pool_holds_the_run(pool, run, results, where)
    return run_document(run, host, results, context, _history(doc.get("history"), where), pool)


def _history(history: Any, where: str) -> dict[str, list[float]] | None:
    """An export's `history` checked: case id → positive rates (GB/s); None where absent."""
    if history is None:
        return None
    if not isinstance(history, dict) or not all(
            isinstance(rates, list) and all(isinstance(g, (int, float)) and not isinstance(g, bool) and g > 0
                                            for g in rates) for rates in history.values()):
        raise BadInput(f"{where}: 'history' must map each case id to a list of positive rates (GB/s)")
    return {str(case): [float(g) for g in rates] for case, rates in history.items()}


def _pool(pool: Any, where: str) -> dict[str, list[dict[str, Any]]] | None:
    """An export's `baseline_pool` checked: case id → [{"run": id, "started_at", "gbps": {median, p10, p90}
    positive GB/s, "contention": record or null}]; None where absent."""
    if pool is None:
        return None
    positive = lambda g: isinstance(g, (int, float)) and not isinstance(g, bool) and g > 0  # noqa: E731
    good = isinstance(pool, dict) and all(isinstance(runs, list) and all(
        isinstance(e, dict) and isinstance(e.get("run"), int) and isinstance(e.get("gbps"), dict)
        and all(positive(e["gbps"].get(k)) for k in RATES) and isinstance(e.get("contention"), (dict, type(None)))
        for e in runs) for runs in pool.values())
    if not good:
        raise BadInput(f"{where}: 'baseline_pool' must map each case id to a list of runs, each with its 'run' id "
                       "and positive 'gbps' median, p10 and p90")
    return {str(case): [{"run": e["run"], "started_at": e.get("started_at"),
                         "gbps": {k: float(e["gbps"][k]) for k in RATES}, "contention": e.get("contention")}
                        for e in runs] for case, runs in pool.items()}


def _pool_holds_the_run(pool: dict[str, list[dict[str, Any]]] | None, run: RunRecord, results: list[ResultRecord],
                        where: str) -> None:
    """Refuse a `baseline_pool` that does not hold the document's own rates: each ok case it names must
    list this run with this run's median, p10 and p90. An export whose results were edited (scaled to
    plant a drop) and whose pool was not would otherwise be judged on the pool, the edit silently lost."""
    if not pool:
        return
    for r in results:
        entries = pool.get(r.case) if r.status == "ok" else None
        if not entries:
            continue
        own = [e for e in entries if e["run"] == run.id]
        rates = {k: (r.gbps or {}).get(k) for k in RATES}
        if len(own) != 1 or any(rates[k] is None or not math.isclose(own[0]["gbps"][k], rates[k], rel_tol=1e-9)
                                for k in RATES):
            held = f"{own[0]['gbps']['median']:.6g} GB/s" if len(own) == 1 else "no entry"
            raise BadInput(f"{where}: 'baseline_pool' does not hold run {run.id}'s own rates for case {r.case} "
                           f"({held} against its result's {rates['median']} GB/s median): edit both, or drop "
                           "'baseline_pool' to compare with the run alone")


def result_row(result: dict[str, Any]) -> dict[str, Any]:
    """A result of a run document as the flat row tables and fits read (the stored columns' names)."""
    gbps, seconds = result.get("gbps") or {}, result.get("seconds") or {}
    return {"bench": result["bench"], "params": result["params"], "case_hash": result["case"],
            "bytes_per_op": result.get("bytes"), "status": result["status"], "reason": result.get("reason"),
            "verified": result.get("verified"), "warnings": result.get("warnings") or [],
            "peak_gbps": result.get("peak_gbps"), "peak_source": result.get("peak_source"),
            "efficiency": result.get("efficiency"), "extra": result.get("metadata") or {},
            "samples": result.get("samples"),
            **{f"gbps_{k}": gbps.get(k) for k in RATES}, **{f"{k}_s": seconds.get(k) for k in STATS}}
