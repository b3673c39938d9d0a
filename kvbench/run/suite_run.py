"""One way to run a suite: plan its cases, open the store, read this host, execute with progress on
stderr, with signals ending the run cleanly. `kvbench run`, `kvbench accept` and
`python -m kvbench.cluster.launch` all call `run_suite`; none drives another through its command line."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from kvbench.benches.describe import describe_params
from kvbench.errors import BadInput
from kvbench.measure.engine import Settings
from kvbench.plan.cases import MAX_CASES, Case, plan
from kvbench.plan.suite import BenchSweep, SuiteSettings, load_suite
from kvbench.run.interrupts import signals_end_runs
from kvbench.run.progress import RunProgress
from kvbench.run.runner import RunInfo, execute
from kvbench.run.this_host import host_facts
from kvbench.store import Store, open_store


@dataclass(frozen=True)
class RunRequest:
    """What to run: a suite (default `quick`) or some benchmarks, with overrides and tags."""

    suite: str | None = None
    benches: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    samples: int | None = None
    precision: float | None = None  # overrides the suite's (a fraction: 0.01 is ±1 %)
    max_time_s: float | None = None  # overrides the suite's sampling budget per case
    ratio_bounds: tuple[float, ...] = ()  # a paired ratio's thresholds: its case stops sampling once clear of them
    db: str | None = None
    max_cases: int = MAX_CASES
    cases: tuple[str, ...] = ()  # only these case ids of the plan (accept's re-measurement); () = all
    remeasure_s: float | None = None  # budget to re-measure contended cases at the end; None: a share of the run


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    store: Store
    failed: int  # cases that failed


def plan_request(request: RunRequest) -> tuple[list[Case], Settings, RunInfo]:
    """The cases, measurement settings and run information of `request`; bad input raises first."""
    if request.suite is None and request.benches:
        sweeps = [BenchSweep(id=b) for b in dict.fromkeys(request.benches)]
        settings, info = SuiteSettings(), RunInfo(tags=request.tags)
        cases = plan(sweeps, None, request.overrides, request.max_cases)
    else:
        loaded, _path, digest = load_suite(request.suite or "quick")
        settings, info = loaded.settings, RunInfo(loaded.name, digest, request.tags)
        cases = plan(loaded.bench, list(request.benches) or None, request.overrides, request.max_cases, str(_path))
    if request.cases:
        cases = [c for c in cases if c.case_hash in request.cases]
    if not cases:
        raise BadInput("the selection has no cases to run")
    engine = settings.engine_settings()
    if request.samples:
        engine = dataclasses.replace(engine, samples=request.samples)
    if request.precision is not None:
        engine = dataclasses.replace(engine, precision=request.precision)
    if request.max_time_s is not None:
        engine = dataclasses.replace(engine, max_time_s=request.max_time_s)
    if request.ratio_bounds:
        engine = dataclasses.replace(engine, ratio_bounds=request.ratio_bounds)
    return cases, engine, info


def run_suite(request: RunRequest, progress: Console) -> RunOutcome:
    """Plan, then run every case into a new run of the store; progress goes to `progress`.

    Bad input raises `BadInput` before anything is written; a signal raises `Interrupted` after
    the run is marked aborted with its finished results kept.
    """
    cases, settings, info = plan_request(request)
    store = open_store(request.db)
    facts = host_facts()
    with signals_end_runs(), RunProgress(progress, len(cases), describe_params) as shown:
        run_id = execute(cases, store, facts, settings, info, on_result=shown.done, on_start=shown.start,
                         remeasure_s=request.remeasure_s, told=shown)
    failed = sum(r["status"] == "failed" for r in store.results(run_id))
    return RunOutcome(run_id, store, failed)
