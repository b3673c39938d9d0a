"""Runs planned cases: availability, prepare, measure, peak, store — one case at a time.

Each result is committed as soon as it exists; Ctrl-C marks the run `aborted` and keeps them.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError

from kvbench import __version__
from kvbench.benches.base import Benchmark
from kvbench.benches.registry import get_bench
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware import contention, fingerprint
from kvbench.hardware.facts import HostFacts
from kvbench.hardware.path import PathPeak, links_under_load, path_peak
from kvbench.measure.engine import Pair, Settings, measure
from kvbench.memory.pages import CaseBuffers, PoolRefused, pages_unavailable_reason
from kvbench.metadata import CONTENTION, HOST_PAGES
from kvbench.plan.cases import Case
from kvbench.run.hosts import adopt_older_ids, stored_id
from kvbench.run.interrupts import Interrupted
from kvbench.run.lifecycle import heartbeat, owner, pid_namespace, process_start, reap
from kvbench.run.result import Result
from kvbench.store.database import Store
from kvbench.store.durable import Unwritable


@dataclass
class RunInfo:
    suite: str | None = None
    suite_hash: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def git_state() -> tuple[str | None, bool | None]:
    """(sha, dirty) of the checkout kvbench runs from; (None, None) when it is not one."""
    top = Path(__file__).resolve().parent.parent
    if not (top / ".git").exists():
        return None, None
    try:
        sha = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(top), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    if sha.returncode != 0:
        return None, None
    return sha.stdout.strip(), bool(dirty.stdout.strip())


def run_case(case: Case, facts: HostFacts, settings: Settings, on_sample: Callable[[], None] | None = None,
             pair: Callable[[], Pair] | None = None) -> Result:
    """Measure one case; never raises for a case-level problem (it becomes skipped/failed). `pair`
    builds another side to time interleaved with it (a peer tool's copy in a crosscheck): its ratio
    is then recorded per pair of samples (metadata `paired`)."""
    bench = get_bench(case.bench)
    base = {"bench": case.bench, "params": case.params, "case_hash": case.case_hash}
    reason = bench.case_unavailable_reason(case.params) or _pages_unavailable_reason(case.params)
    if reason:
        return Result(**base, status="skipped", reason=reason)
    buffers = CaseBuffers(case.params.get("pages"))  # every host buffer the case allocates takes its page size
    try:
        with buffers:
            prepared = bench.prepare(case.params)
    except PoolRefused as exc:  # the hugetlb pool was too small for all of the case's buffers
        return Result(**base, status="skipped", reason=str(exc))
    except Exception as exc:  # a library's own error type (NIXL, cupy) fails this case, not the run
        return Result(**base, status="failed", reason=f"could not prepare: {type(exc).__name__}: {exc}",
                      metadata={"traceback": traceback.format_exc(limit=5)})
    try:
        if pair is not None:  # inside the case's try: one that cannot be built fails the case, its buffers freed
            with buffers:  # the peer's buffers at the case's page size: a comparison at equal pages
                prepared.workload.pair = pair()
        with contention.watch(_case_gpus(bench, case, facts)) as seen:  # around the timed part, not inside it
            measurement = measure(prepared.workload, settings, on_sample)
            derived = prepared.derive(measurement)  # while the case's buffers and requests still exist
    except IntegrityError as exc:
        return Result(**base, status="failed", reason=f"integrity check failed: {exc}", metadata=prepared.metadata)
    except PoolRefused as exc:  # the other side's buffers did not fit in the hugetlb pool left
        return Result(**base, status="skipped", reason=str(exc))
    except Exception as exc:
        return Result(**base, status="failed", reason=f"{type(exc).__name__}: {exc}",
                      metadata={**prepared.metadata, "traceback": traceback.format_exc(limit=5)})
    finally:
        prepared.close()
    metadata = result_metadata(prepared.metadata, derived, seen.record(), buffers.record())
    # The peak is taken after the copies: a GPU link read while they ran replaces its max gen/width.
    try:
        peak = path_peak(bench.path(case.params), facts, links_under_load(case.params, metadata))
    except Exception as exc:  # a benchmark's path that cannot be named costs its peak, not its result
        peak = PathPeak(None, f"no peak: {type(exc).__name__}: {exc}")
    if peak.bottleneck:
        metadata["bottleneck"] = peak.bottleneck
    return Result(**base, status="ok", measurement=measurement, peak=peak.peak, peak_reason=peak.reason,
                  metadata=metadata)


def result_metadata(prepared: dict[str, Any], derived: dict[str, Any],
                    seen: dict[str, Any] | None = None, pages: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a result records: the case's metadata, then what was derived from its samples (which
    wins a clash), then the contention seen while it was timed, then its host buffers' page size
    (`host_pages`: asked, and each buffer's huge-page backing), with a warning from each kept."""
    seen, pages = seen or {}, dict(pages or {})
    troubles = [*(f"contended: {why}" for why in seen.get("contended", [])), *seen.get("faults", [])]
    warning = "; ".join(w for w in (prepared.get("warning"), derived.get("warning"), *troubles, pages.pop("warning", None))
                        if w)
    kept = {HOST_PAGES: pages} if pages.get("buffers") else {}
    return {**prepared, **derived, **({CONTENTION: seen} if seen else {}), **kept,
            **({"warning": warning} if warning else {})}


def _pages_unavailable_reason(params: dict[str, Any]) -> str | None:
    """Why the case's host buffers cannot have the page size it asks for here (THP off, no hugetlb pool or
    an empty one): the case is skipped with it. Whether the pool holds every buffer the case maps is asked
    when the benchmark states them all (memory.host.check_fits) and again as each is mapped: the case's
    `size` is one buffer of several."""
    asked = params.get("pages")
    if not asked or asked == "base":
        return None
    return pages_unavailable_reason(asked, 0)


def _case_gpus(bench: Benchmark, case: Case, facts: HostFacts) -> list[str]:
    """The GPUs whose clocks, throttling and other processes the case's contention record reads."""
    try:
        return contention.case_gpus(bench.path(case.params), facts)
    except Exception:  # a path that cannot be named costs the GPU readings, not the case
        return []


REMEASURE_SHARE = 0.1  # the default re-measurement budget: a tenth of the run's own time


def contention_load(result: Result) -> float | None:
    """The share of the box (0–1) others took while `result` was timed (CPU plus steal), None when it
    was not contended (kvbench/analyze/regress/contended.py judges the same record)."""
    record = result.metadata.get(CONTENTION) or {}
    if result.status != "ok" or not record.get("contended"):
        return None
    host = record.get("host") or {}
    return float(host.get("others_cpu_fraction") or 0.0) + float(host.get("steal_fraction") or 0.0)


def _quieter(again: Result, first: Result) -> bool:
    """Whether a re-measurement is the one to keep: ok, and clean or less contended than the first."""
    if again.status != "ok":
        return False
    load = contention_load(again)
    return load is None or load < (contention_load(first) or 0.0)


def _summary(result: Result) -> dict[str, Any]:
    record = result.metadata.get(CONTENTION) or {}
    return {"status": result.status, "gbps": result.gbps, "contended": list(record.get("contended") or []),
            "others_cpu_fraction": (record.get("host") or {}).get("others_cpu_fraction")}


def execute(cases: list[Case], store: Store, facts: HostFacts, settings: Settings, info: RunInfo,
            on_result: Callable[[Result], None] | None = None,
            on_sample: Callable[[], None] | None = None,
            on_start: Callable[[int, Case], None] | None = None,
            run_one: Callable[[int, Case], Result | None] | None = None, planned: int | None = None,
            remeasure_s: float | None = None, told: Any = None) -> int:
    """Run every case into a new run of `store`; returns the run id. `on_start(i, case)` is called
    as case i (from 0) starts, `on_result(result)` as it ends. `run_one(i, case)` replaces
    `run_case` (a rank of a cluster waits for its round first); None stores nothing for that case,
    and `planned` is then the count of cases the run expects to store.

    A case measured under contention is measured once more at the end of the run, while budget is
    left (`remeasure_s` seconds, checked before each; None: REMEASURE_SHARE of the time the run took;
    0: never), and the quieter of the two is stored, the other summarised in its metadata
    (`remeasured`): a busy minute need not decide the run's verdict. Until then the first result is
    held, and stored as it is if the run ends early. A cluster rank (`run_one`) re-measures nothing.
    `told` (run.progress.RunProgress) says so: `remeasuring(count, budget_s)` before, `remeasured(case,
    kept, other)` per case (`other` None: not measured again), so the live lines and the table agree.

    A signal (`Interrupted`: SIGINT, SIGTERM, SIGHUP) or KeyboardInterrupt marks the run `aborted`,
    any other escape `failed`; both re-raise.
    """
    try:
        run_id = _begin(cases, store, facts, info, len(cases) if planned is None else planned)
    except DBAPIError as exc:
        raise BadInput(f"cannot write to database {store.url}: {_first_line(exc)}") from None
    failed = 0
    held: dict[int, tuple[Case, Result]] = {}  # contended results waiting for their re-measurement, by case index
    store_result = lambda result: store.add_result(run_id, result.to_row(),  # noqa: E731
                                                   list(result.measurement.samples_s) if result.measurement else [])
    started = time.monotonic()
    try:
        with heartbeat(store, run_id):  # a long case is never taken for a dead run
            for i, case in enumerate(cases):
                if on_start:
                    on_start(i, case)
                result = run_one(i, case) if run_one else run_case(case, facts, settings, on_sample)
                if result is None:
                    continue
                if run_one is None and remeasure_s != 0 and contention_load(result) is not None:
                    held[i] = (case, result)
                else:
                    store_result(result)
                failed += result.status == "failed"
                if on_result:
                    on_result(result)
            budget = REMEASURE_SHARE * (time.monotonic() - started) if remeasure_s is None else remeasure_s
            deadline = time.monotonic() + budget
            if held and told is not None:
                told.remeasuring(len(held), budget)
            for i in sorted(held):
                case, first = held[i]
                kept, other = first, None
                if time.monotonic() < deadline:
                    again = run_case(case, facts, settings, on_sample)
                    kept, other = (again, first) if _quieter(again, first) else (first, again)
                    kept = dataclasses.replace(kept, metadata={
                        **kept.metadata, "remeasured": {"kept": "again" if kept is again else "first",
                                                        "other": _summary(other)}})
                if told is not None:
                    told.remeasured(case, kept, other)
                store_result(kept)
                del held[i]
    except Unwritable as exc:  # the database file was deleted or replaced: nothing left to mark
        raise Unwritable(f"{exc}; run {run_id} ended there") from None
    except KeyboardInterrupt as exc:
        _store_held(store_result, held)
        name = exc.name if isinstance(exc, Interrupted) else "SIGINT"
        _finish(store, run_id, "aborted", f"interrupted ({name})", fingerprint.end_state())
        if isinstance(exc, Interrupted):
            exc.run_id = run_id
        raise
    except DBAPIError as exc:  # the database filled up, or went away: one line, the run marked where it can be
        why = _first_line(exc)
        marked = _finish(store, run_id, "failed", f"database write failed: {why}")
        raise BadInput(f"cannot write to database {store.url}: {why}; run {run_id} "
                       f"{'is marked failed, its finished results kept' if marked else 'could not be marked failed'}"
                       ) from None
    except BaseException as exc:
        _store_held(store_result, held)
        _finish(store, run_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    store.finish_run(run_id, "failed" if failed else "complete", f"{failed} case(s) failed" if failed else None,
                     fingerprint.end_state())
    return run_id


def _store_held(store_result: Callable[[Result], Any], held: dict[int, tuple[Case, Result]]) -> None:
    """Store the contended results still waiting for a re-measurement, as measured: a run that ends
    early loses none of them (best effort: the database may be what failed)."""
    for i in sorted(held):
        try:
            store_result(held[i][1])
        except (DBAPIError, Unwritable):
            return
    held.clear()


def _begin(cases: list[Case], store: Store, facts: HostFacts, info: RunInfo, planned: int) -> int:
    adopt_older_ids(store, facts)  # this box's runs under an older kvbench's id become this id's
    host_id = stored_id(store, facts)
    reap(store, [host_id])  # runs a SIGKILL or the OOM killer left `running` become `crashed`, their files removed
    ctx = fingerprint.context()
    ctx_id = fingerprint.context_id(ctx)
    store.ensure_host(host_id, facts.hostname, facts.to_dict())
    store.ensure_context(ctx_id, ctx)
    sha, dirty = git_state()
    temp_dirs = sorted({tempfile.gettempdir(), *(str(c.params["path"]) for c in cases if c.params.get("path"))})
    return store.begin_run(
        host_id=host_id, context_id=ctx_id, suite=info.suite, suite_hash=info.suite_hash,
        kvbench_version=__version__, git_sha=sha, git_dirty=dirty, tags=info.tags,
        system_state={**fingerprint.system_state(facts), "temp_dirs": temp_dirs, "pid_namespace": pid_namespace(),
                      "pid_start": process_start()},
        cases_planned=planned, owner=owner(), facts=facts.to_dict(),
    )


def _finish(store: Store, run_id: int, status: str, reason: str, end_state: dict | None = None) -> bool:
    """Close the run as `status`; False when the database would not take it (full, gone)."""
    try:
        store.finish_run(run_id, status, reason, end_state)
        return True
    except (DBAPIError, Unwritable):
        return False


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
